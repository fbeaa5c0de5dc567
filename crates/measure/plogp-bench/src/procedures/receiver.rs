//! The receiver's side of the PLogP test: it follows the sender's control messages.

use super::*;

impl PLogP {
    pub(super) fn receiver(&mut self, t: &dyn Transport, i: usize) -> Result<(), TransportError> {
        let mut msg = [0u8; 24];
        loop {
            t.recv(i, CONTROL, &mut msg)?;
            let word =
                |k: usize| u64::from_le_bytes(msg[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
            let (procedure, m, count) = (word(0), word(1) as usize, word(2) as usize);
            if m > self.buf.len() {
                return Err(TransportError::Protocol {
                    rank: t.rank(),
                    message: format!("the sender asked for {m} bytes, more than the largest size"),
                });
            }
            let buf = &mut self.buf[..m];
            match procedure {
                PROC_END => return Ok(()),
                PROC_RTT => {
                    for _ in 0..count {
                        t.recv(i, DATA, buf)?;
                        t.send(i, DATA, &[])?;
                    }
                }
                PROC_OR | PROC_WARMUP => {
                    for _ in 0..count {
                        t.recv(i, DATA, buf)?;
                        t.send(i, DATA, buf)?;
                    }
                }
                PROC_OS => {
                    for _ in 0..count {
                        t.send(i, DATA, &[])?;
                        t.recv(i, DATA, buf)?;
                    }
                }
                PROC_SATURATE => {
                    for _ in 0..count {
                        t.recv(i, DATA, buf)?;
                    }
                    t.send(i, DATA, &[])?;
                }
                other => {
                    return Err(TransportError::Protocol {
                        rank: t.rank(),
                        message: format!("unknown PLogP procedure {other} from rank {i}"),
                    })
                }
            }
        }
    }
}
