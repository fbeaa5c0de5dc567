//! The pair test of a run and its parameters, as meta.json holds them.

use serde::{Deserialize, Serialize};

/// The pair test and its parameters: in meta.json `{"name": .., "parameters": {..}}`, the
/// parameters' keys sorted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", content = "parameters")]
pub enum TestInfo {
    /// The ping-pong test (a full run's, or a staged run's screening).
    #[serde(rename = "pingpong")]
    PingPong(crate::PingPongParameters),
    /// The PLogP procedures.
    #[serde(rename = "plogp")]
    PLogP(crate::PLogPOptions),
    /// An imported pair list or matrix.
    #[serde(rename = "imported")]
    Imported(crate::records::ImportedParameters),
    /// An imported mpiGraph run.
    #[serde(rename = "mpigraph")]
    MpiGraph(crate::records::MpiGraphParameters),
}

impl From<crate::PingPongParameters> for TestInfo {
    fn from(p: crate::PingPongParameters) -> Self {
        TestInfo::PingPong(p)
    }
}

impl From<crate::PLogPOptions> for TestInfo {
    fn from(p: crate::PLogPOptions) -> Self {
        TestInfo::PLogP(p)
    }
}

impl TestInfo {
    /// The test's name, as meta.json writes it.
    pub fn name(&self) -> &'static str {
        match self {
            TestInfo::PingPong(_) => "pingpong",
            TestInfo::PLogP(_) => "plogp",
            TestInfo::Imported(_) => "imported",
            TestInfo::MpiGraph(_) => "mpigraph",
        }
    }

    /// Each parameter's name and value as meta.json writes it, by name: for showing them.
    pub fn parameters(&self) -> Vec<(String, serde_json::Value)> {
        let object = match sorted_value(self) {
            Ok(serde_json::Value::Object(mut o)) => o.remove("parameters"),
            _ => None,
        };
        match object {
            Some(serde_json::Value::Object(o)) => o.into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// The parameters as one line of JSON, keys sorted.
    pub fn parameters_text(&self) -> String {
        sorted_value(self).map_or_else(|e| e.to_string(), |v| v["parameters"].to_string())
    }
}

/// `t` as a JSON value: its objects' keys sorted (serde_json's maps are ordered by key).
fn sorted_value<T: Serialize>(t: &T) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::to_value(t)
}

/// Writes `t` with its objects' keys sorted, as meta.json has always held the test's parameters.
pub(super) fn sorted<T: Serialize, S: serde::Serializer>(t: &T, s: S) -> Result<S::Ok, S::Error> {
    sorted_value(t)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}
