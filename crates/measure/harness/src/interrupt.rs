//! What rank 0 says when the run is interrupted (Ctrl-C, `kill`, Slurm's time limit): how many
//! pair tests the journal keeps and the command that continues the run.
//!
//! The handler runs in signal context, so it only reads what was prepared before (the message
//! around the count) and an atomic counter, writes with write(2), and ends the process with
//! _exit(2); journal lines already written stay in the file (a line cut short is trimmed on
//! resume).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Pair tests in the journal: resumed ones and those received since.
static KEPT: AtomicUsize = AtomicUsize::new(0);
/// Pair tests the run has in all, so far as known.
static TOTAL: AtomicUsize = AtomicUsize::new(0);
/// The message before the count, between the counts, and after them.
static MESSAGE: OnceLock<[Vec<u8>; 3]> = OnceLock::new();

/// The command that continues the run in `dir`: the launch the run was started with (its
/// options, which place and bind the ranks, included) when its command line was read, else
/// `srun -n N` or `mpirun -np N` by the launcher's kind.
pub fn resume_command(launcher: &lgate_rundir::LauncherInfo, ranks: usize, dir: &Path) -> String {
    let program = std::env::args()
        .next()
        .and_then(|p| {
            Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "lgate-plogp".into());
    launcher.resume_line(&program, ranks, dir)
}

/// Prints, on SIGINT, SIGTERM or SIGHUP, how much of the run whose journal is `journal` is
/// kept and `resume`, then ends the process; call once on rank 0 when its journal is open.
pub fn arm(journal: &Path, resume: &str) {
    let message = [
        b"\nlgate-plogp: interrupted: ".to_vec(),
        b" of ".to_vec(),
        format!(
            " pair tests are kept in {}; continue the run with:\n  {resume}\n",
            journal.display()
        )
        .into_bytes(),
    ];
    if MESSAGE.set(message).is_err() {
        return;
    }
    // SAFETY: installs a handler that only does async-signal-safe work (atomic loads,
    // write(2), _exit(2)) on memory prepared before.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// How long a rank other than 0 outlives a signal, so that rank 0's last words go out first.
const BEHIND_RANK_0: libc::timespec = libc::timespec {
    tv_sec: 0,
    tv_nsec: 500_000_000,
};

/// On a rank other than 0: ends the process half a second after SIGINT, SIGTERM or SIGHUP
/// rather than at once. A launcher passes a Ctrl-C on to every rank, and hydra (MPICH) tears
/// the job down when the first rank dies; on a busy machine that was often a waiting rank, dead
/// before rank 0 had run its handler, so the user never learnt what was kept. A second signal,
/// SIGKILL, or the launcher's own teardown still ends the rank at once.
pub fn arm_behind_rank_0() {
    // SAFETY: installs a handler that only calls nanosleep(2) and _exit(2), both
    // async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal_behind_rank_0 as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut action.sa_mask);
        // A second signal while sleeping ends the rank with the default action.
        action.sa_flags = libc::SA_RESETHAND;
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_signal_behind_rank_0(signal: libc::c_int) {
    // SAFETY: nanosleep(2) and _exit(2) are async-signal-safe.
    unsafe {
        libc::nanosleep(&BEHIND_RANK_0, std::ptr::null_mut());
        libc::_exit(128 + signal);
    }
}

/// Gives SIGINT, SIGTERM and SIGHUP back their default action once the run and its outputs
/// are complete, so that a signal then (a launcher ending a rank stuck in MPI_Finalize) does
/// not offer to continue a finished run.
pub fn disarm() {
    // SAFETY: restores the default disposition of three signals.
    unsafe {
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

/// Records how many pair tests are kept and expected in all.
pub fn record(kept: usize, total: usize) {
    KEPT.store(kept, Ordering::Relaxed);
    TOTAL.store(total, Ordering::Relaxed);
}

/// A number in decimal, without allocating.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    if let Some([before, between, after]) = MESSAGE.get() {
        let (mut a, mut b) = ([0u8; 20], [0u8; 20]);
        let kept = decimal(KEPT.load(Ordering::Relaxed), &mut a);
        let total = decimal(TOTAL.load(Ordering::Relaxed), &mut b);
        // One write(2) of the whole message where it fits a stack buffer: a launcher that kills
        // the rank right after the signal (hydra) or closes its pipe may otherwise forward only
        // the first part.
        let parts = [before.as_slice(), kept, between, total, after];
        let mut whole = [0u8; 8192];
        let mut len = 0;
        if parts.iter().map(|p| p.len()).sum::<usize>() <= whole.len() {
            for part in parts {
                whole[len..len + part.len()].copy_from_slice(part);
                len += part.len();
            }
            // SAFETY: write(2) of a live buffer to standard error.
            unsafe { libc::write(2, whole.as_ptr().cast(), len) };
        } else {
            for part in parts {
                // SAFETY: write(2) of a live buffer to standard error.
                unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
            }
        }
    }
    // SAFETY: _exit(2) is async-signal-safe; 128 + the signal is the shell's convention.
    unsafe { libc::_exit(128 + signal) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_without_allocating() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(4096, &mut buf), b"4096");
        assert_eq!(
            decimal(usize::MAX, &mut buf),
            usize::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn the_resume_command_follows_the_launcher() {
        let dir = Path::new("lgate-run-x");
        let kind = |kind: &str, line: Option<&str>| lgate_rundir::LauncherInfo {
            kind: kind.into(),
            command_line: line.map(String::from),
            environment: Default::default(),
        };
        assert!(resume_command(&kind("slurm", None), 64, dir).starts_with("srun -n 64 "));
        let mpirun = resume_command(&kind("mpirun", None), 4, dir);
        assert!(mpirun.starts_with("mpirun -np 4 "), "{mpirun}");
        let resume = lgate_knobs::Knob::Resume.in_command();
        assert!(
            mpirun.ends_with(&format!(" {resume} lgate-run-x")),
            "{mpirun}"
        );
        // The launch as it was typed, binding included, with this program's name in it.
        let program = std::env::args().next().unwrap();
        let name = Path::new(&program).file_name().unwrap().to_string_lossy();
        let line =
            format!("mpirun --bind-to core:overload-allowed -np 4 /opt/bin/{name} measure -o x");
        assert_eq!(
            resume_command(&kind("mpirun", Some(&line)), 4, dir),
            format!(
                "mpirun --bind-to core:overload-allowed -np 4 /opt/bin/{name} {resume} lgate-run-x"
            )
        );
        // A line without the program falls back to the launcher's kind.
        let other = resume_command(&kind("mpirun", Some("mpirun -np 4 ./a.out")), 4, dir);
        assert!(other.starts_with("mpirun -np 4 "), "{other}");
    }
}
