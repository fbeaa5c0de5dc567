//! MPI_T control variables (the MPI tools interface, MPI 3.0): the library's settings, such as
//! its eager and rendezvous thresholds, read once after MPI_Init and outside timed code.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};

use mpi::ffi;

extern "C" {
    /// MPI_T_BIND_NO_OBJECT, from `src/constants.c` (its binding is spelled differently by
    /// Open MPI's and MPICH's headers).
    fn lgate_mpi_t_bind_no_object() -> c_int;
}

/// Parts of a control variable's name that mark a message-protocol threshold, the settings
/// that explain steps in PLogP curves.
/// Matched without regard to case: Open MPI names its variables in lower case
/// (`btl_vader_eager_limit`), MPICH in upper case (`CH4_OFI_EAGER_MAX_MSG_SIZE`).
pub const PROTOCOL_PATTERNS: &[&str] = &[
    "eager",
    "rndv",
    "rendezvous",
    "max_send_size",
    "rdma_pipeline",
    "p2p_threshold",
];

/// Prefixes of environment variables that set message protocols outside MPI_T: UCX and
/// libfabric (the transports under MPICH's ch4 and Open MPI's pml ucx / mtl ofi), MPICH's own
/// control variables, and those of Cray MPICH, Intel MPI and MVAPICH2.
pub const PROTOCOL_ENVIRONMENT: &[&str] =
    &["UCX_", "FI_", "MPIR_CVAR_", "MPICH_", "I_MPI_", "MV2_"];

/// The environment variables of [`PROTOCOL_ENVIRONMENT`] that are set, by name.
pub fn protocol_environment() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| PROTOCOL_ENVIRONMENT.iter().any(|p| k.starts_with(p)))
        .collect()
}

/// Whether a control variable's name is one of the protocol settings.
pub fn is_protocol_setting(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    PROTOCOL_PATTERNS.iter().any(|p| lower.contains(p))
}

/// A control variable's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlValue {
    /// An integer setting.
    Integer(i128),
    /// A floating-point setting.
    Float(f64),
    /// A text setting.
    Text(String),
}

/// Control variables read through MPI_T.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlVariables {
    /// How many control variables the library has.
    pub total: usize,
    /// The ones whose names match [`PROTOCOL_PATTERNS`] and that could be read, by name.
    pub protocol: BTreeMap<String, ControlValue>,
}

/// Reads the control variables; `None` when the library has no usable tools interface.
///
/// # Safety of the FFI
/// Every buffer handed to MPI is sized from what MPI reported for it; handles are freed on
/// every path, and MPI_T is finalised before returning.
pub fn read_control_variables() -> Option<ControlVariables> {
    let mut provided: c_int = 0;
    // SAFETY: MPI_T_init_thread may be called at any time, also after MPI_Init.
    if unsafe { ffi::MPI_T_init_thread(ffi::MPI_THREAD_SINGLE as c_int, &mut provided) } != 0 {
        return None;
    }
    let mut out = ControlVariables::default();
    let mut num: c_int = 0;
    // SAFETY: MPI_T is initialised; `num` is a valid out-pointer.
    if unsafe { ffi::MPI_T_cvar_get_num(&mut num) } == 0 {
        out.total = num.max(0) as usize;
        for index in 0..num {
            if let Some((name, value)) = read_one(index) {
                out.protocol.insert(name, value);
            }
        }
    }
    // SAFETY: balanced with the successful MPI_T_init_thread above.
    unsafe { ffi::MPI_T_finalize() };
    Some(out)
}

fn read_one(index: c_int) -> Option<(String, ControlValue)> {
    let mut name = [0 as c_char; 256];
    let mut name_len = name.len() as c_int;
    let mut verbosity: c_int = 0;
    let mut datatype: ffi::MPI_Datatype = unsafe { std::mem::zeroed() };
    let mut enumtype: ffi::MPI_T_enum = unsafe { std::mem::zeroed() };
    let mut desc_len: c_int = 0;
    let mut bind: c_int = 0;
    let mut scope: c_int = 0;
    // SAFETY: `name` holds `name_len` bytes; a null description with length 0 asks for none.
    let rc = unsafe {
        ffi::MPI_T_cvar_get_info(
            index,
            name.as_mut_ptr(),
            &mut name_len,
            &mut verbosity,
            &mut datatype,
            &mut enumtype,
            std::ptr::null_mut(),
            &mut desc_len,
            &mut bind,
            &mut scope,
        )
    };
    // SAFETY: returns a constant.
    if rc != 0 || bind != unsafe { lgate_mpi_t_bind_no_object() } {
        return None;
    }
    // SAFETY: MPI wrote a NUL-terminated name into the buffer.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    if !is_protocol_setting(&name) {
        return None;
    }
    let mut type_name = [0 as c_char; 256];
    let mut type_name_len: c_int = 0;
    let mut type_size: c_int = 0;
    // SAFETY: `datatype` is a predefined type MPI returned; the buffers are large enough
    // (MPI_MAX_OBJECT_NAME is 64 in Open MPI and MPICH).
    unsafe {
        if ffi::MPI_Type_get_name(datatype, type_name.as_mut_ptr(), &mut type_name_len) != 0
            || ffi::MPI_Type_size(datatype, &mut type_size) != 0
        {
            return None;
        }
    }
    let type_name = unsafe { CStr::from_ptr(type_name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mut handle: ffi::MPI_T_cvar_handle = unsafe { std::mem::zeroed() };
    let mut count: c_int = 0;
    // SAFETY: a variable bound to no object takes a null object handle.
    if unsafe { ffi::MPI_T_cvar_handle_alloc(index, std::ptr::null_mut(), &mut handle, &mut count) }
        != 0
    {
        return None;
    }
    let bytes = (count.max(0) as usize) * (type_size.max(0) as usize);
    let mut buf = vec![0u8; bytes.max(8)];
    // SAFETY: `buf` holds `count` elements of `type_size` bytes, as MPI reported.
    let rc = unsafe { ffi::MPI_T_cvar_read(handle, buf.as_mut_ptr().cast()) };
    // SAFETY: the handle was allocated above.
    unsafe { ffi::MPI_T_cvar_handle_free(&mut handle) };
    if rc != 0 {
        return None;
    }
    let value = decode(&type_name, type_size as usize, count as usize, &buf)?;
    Some((name, value))
}

/// A value from its MPI type name and size.
fn decode(type_name: &str, size: usize, count: usize, buf: &[u8]) -> Option<ControlValue> {
    if type_name == "MPI_CHAR" {
        let end = buf[..count.min(buf.len())]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(count.min(buf.len()));
        return Some(ControlValue::Text(
            String::from_utf8_lossy(&buf[..end]).into_owned(),
        ));
    }
    if count != 1 {
        return None;
    }
    let unsigned = type_name.contains("UNSIGNED") || type_name.contains("UINT");
    match (type_name, size) {
        ("MPI_DOUBLE", 8) => Some(ControlValue::Float(f64::from_ne_bytes(
            buf[..8].try_into().ok()?,
        ))),
        (_, 4) if unsigned => Some(ControlValue::Integer(u32::from_ne_bytes(
            buf[..4].try_into().ok()?,
        ) as i128)),
        (_, 4) => Some(ControlValue::Integer(
            i32::from_ne_bytes(buf[..4].try_into().ok()?) as i128,
        )),
        (_, 8) if unsigned => Some(ControlValue::Integer(u64::from_ne_bytes(
            buf[..8].try_into().ok()?,
        ) as i128)),
        (_, 8) => Some(ControlValue::Integer(
            i64::from_ne_bytes(buf[..8].try_into().ok()?) as i128,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_mpi_types() {
        assert_eq!(
            decode("MPI_INT", 4, 1, &(-5i32).to_ne_bytes()),
            Some(ControlValue::Integer(-5))
        );
        assert_eq!(
            decode("MPI_UNSIGNED_LONG", 8, 1, &u64::MAX.to_ne_bytes()),
            Some(ControlValue::Integer(u64::MAX as i128))
        );
        assert_eq!(
            decode("MPI_CHAR", 1, 5, b"tcp\0\0\0\0\0"),
            Some(ControlValue::Text("tcp".into()))
        );
        assert_eq!(
            decode("MPI_DOUBLE", 8, 1, &1.5f64.to_ne_bytes()),
            Some(ControlValue::Float(1.5))
        );
        assert_eq!(decode("MPI_INT", 4, 2, &[0; 8]), None);
    }

    #[test]
    fn protocol_settings_are_told_by_name_in_either_case() {
        for name in [
            "btl_vader_eager_limit",
            "pml_ob1_rndv_eager_limit",
            "CH4_OFI_EAGER_MAX_MSG_SIZE",
            "NEMESIS_SHM_EAGER_MAX_SZ",
            "CH4_IPC_XPMEM_P2P_THRESHOLD",
        ] {
            assert!(is_protocol_setting(name), "{name}");
        }
        assert!(!is_protocol_setting("mpi_yield_when_idle"));
        assert!(!is_protocol_setting("ASYNC_PROGRESS"));
    }
}
