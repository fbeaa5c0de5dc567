//! meta.json's `mpi`: the MPI library a run measured with and the settings that explain its
//! curves (MPI_T control variables whose names mark protocol thresholds, the transport's
//! environment variables, how waiting ranks yield).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The MPI library and its settings, as a run recorded them (empty for simulated and imported
/// runs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiInfo {
    /// The library's settings, where it has any worth recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_variables: Option<MpiSettings>,
    /// What MPI_Get_library_version said (several lines for MPICH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_version: Option<String>,
}

impl MpiInfo {
    /// The first line of the library's description, with MPICH's device line: `Open MPI
    /// v4.1.4, ...` or `MPICH Version: 5.0.2, MPICH Device: ch4:ucx ofi`.
    pub fn library_line(&self) -> Option<String> {
        let library = self.library_version.as_deref()?;
        let lines: Vec<String> = library
            .lines()
            .enumerate()
            .filter(|(k, line)| *k == 0 || line.starts_with("MPICH Device"))
            .map(|(_, line)| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        Some(lines.join(", "))
    }

    /// The protocol thresholds recorded, by name (none when the library has no MPI_T).
    pub fn protocol(&self) -> &BTreeMap<String, SettingValue> {
        static NONE: BTreeMap<String, SettingValue> = BTreeMap::new();
        self.control_variables
            .as_ref()
            .and_then(|c| c.protocol.as_ref())
            .unwrap_or(&NONE)
    }

    /// The transport's environment variables recorded, by name.
    pub fn environment(&self) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.control_variables
            .as_ref()
            .map_or(&NONE, |c| &c.environment)
    }
}

/// The settings of the MPI library worth recording.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MpiSettings {
    /// The transport's environment variables that set protocols (UCX_, FI_, OMPI_MCA_btl...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment: BTreeMap<String, String>,
    /// Open MPI's yield-when-idle setting, where lgate-plogp or the environment set it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_yield_when_idle: Option<YieldSetting>,
    /// The control variables read through MPI_T whose names match `selected`, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<BTreeMap<String, SettingValue>>,
    /// The name patterns of the control variables kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected: Option<Vec<String>>,
    /// How many control variables the library has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
}

impl MpiSettings {
    /// Whether there is nothing to record.
    pub fn is_empty(&self) -> bool {
        *self == MpiSettings::default()
    }
}

/// The value of one MPI_T control variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    /// An integer that fits in 64 bits.
    Integer(i64),
    /// A floating-point value.
    Float(f64),
    /// Text, or an integer too large for 64 bits written out.
    Text(String),
}

impl SettingValue {
    /// A positive whole number of bytes, where the value is one (protocol thresholds).
    pub fn positive(&self) -> Option<u64> {
        match self {
            SettingValue::Integer(i) => u64::try_from(*i).ok().filter(|&x| x > 0),
            _ => None,
        }
    }
}

impl std::fmt::Display for SettingValue {
    /// As meta.json holds it, text unquoted.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Integer(i) => write!(f, "{i}"),
            SettingValue::Float(x) => write!(f, "{}", serde_json::Value::from(*x)),
            SettingValue::Text(t) => f.write_str(t),
        }
    }
}

/// Open MPI's `mpi_yield_when_idle` as the run had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct YieldSetting {
    /// Whether lgate-plogp switches it on for pairs of ranks that share one CPU.
    pub on_for_pairs_bound_to_one_cpu: bool,
    /// Who set it: `lgate-plogp` or `environment`.
    pub set_by: String,
    /// Its value.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_mpi_reads_back_and_names_its_library() {
        let text = r#"{"library_version": "MPICH Version:\t5.0.2\nMPICH Release date: x\nMPICH Device:\tch4:ucx ofi\n",
            "control_variables": {"total": 900, "selected": ["EAGER"],
              "protocol": {"MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD": 16384, "X_FLOAT": 0.5, "X_TEXT": "auto"},
              "environment": {"UCX_TLS": "tcp"}}}"#;
        let mpi: MpiInfo = serde_json::from_str(text).unwrap();
        assert_eq!(
            mpi.library_line().unwrap(),
            "MPICH Version: 5.0.2, MPICH Device: ch4:ucx ofi"
        );
        let p = mpi.protocol();
        assert_eq!(
            p["MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD"].positive(),
            Some(16384)
        );
        assert_eq!(p["X_FLOAT"], SettingValue::Float(0.5));
        assert_eq!(p["X_TEXT"].to_string(), "auto");
        assert_eq!(mpi.environment()["UCX_TLS"], "tcp");
        let again: MpiInfo = serde_json::from_str(&serde_json::to_string(&mpi).unwrap()).unwrap();
        assert_eq!(again, mpi);
        // Simulated and imported runs record none.
        let none: MpiInfo = serde_json::from_str("{}").unwrap();
        assert!(none.library_line().is_none() && none.protocol().is_empty());
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
    }
}
