//! The staged plan's choices, as a run's meta.json records them.

use serde::{Deserialize, Serialize};

/// The choices of a staged plan (`measure --plan staged`), as a run's meta.json records them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedChoices {
    /// Rank pairs tested per pair of groups (K); all of them when K covers them.
    pub pairs_between: usize,
    /// Full pair tests per kind of pair (inside groups, between groups), spread over the
    /// screening's distances.
    pub samples: usize,
    /// Screened pairs tested again alone, to measure the bias of testing side by side.
    pub alone: usize,
    /// The most extra screening tests for pairs of groups whose samples disagree.
    #[serde(default)]
    pub refine: usize,
    /// The most extra screening tests between the groups of a level the samples nearly decide
    /// (0 in the choices of runs made before it: a resumed run chooses as it did).
    #[serde(default)]
    pub confidence: usize,
    /// The most pair tests running at once across the machine; unbounded when `None`.
    pub concurrency: Option<usize>,
    /// The stage between groups screens every pair across groups, LinkTest's way (see
    /// the harness's `sweep`), instead of K sampled pairs per pair of groups.
    #[serde(default)]
    pub sweep: bool,
}

impl Default for StagedChoices {
    fn default() -> Self {
        StagedChoices {
            pairs_between: 4,
            samples: 3,
            alone: 8,
            refine: 32,
            confidence: 512,
            concurrency: None,
            sweep: false,
        }
    }
}

impl StagedChoices {
    /// Each choice for people, by its name in meta.json: (name, value), `concurrency`
    /// `unbounded` when there is no bound.
    pub fn described(&self) -> Vec<(&'static str, String)> {
        vec![
            ("alone", self.alone.to_string()),
            (
                "concurrency",
                self.concurrency
                    .map_or("unbounded".into(), |n| n.to_string()),
            ),
            ("confidence", self.confidence.to_string()),
            ("pairs_between", self.pairs_between.to_string()),
            ("refine", self.refine.to_string()),
            ("samples", self.samples.to_string()),
            ("sweep", self.sweep.to_string()),
        ]
    }
}

impl std::fmt::Display for StagedChoices {
    /// The choices in words: `pairs between 4, samples 3, ...`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let said: Vec<String> = (self.described().into_iter())
            .map(|(name, value)| format!("{} {value}", name.replace('_', " ")))
            .collect();
        f.write_str(&said.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_is_described_by_its_name_in_the_file() {
        let choices = StagedChoices {
            concurrency: Some(3),
            ..StagedChoices::default()
        };
        let value = serde_json::to_value(&choices).unwrap();
        let names: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let described = choices.described();
        let described_names: Vec<&str> = described.iter().map(|(n, _)| *n).collect();
        assert_eq!(described_names, names);
        for (name, text) in &described {
            assert_eq!(*text, value[*name].to_string().trim_matches('"'), "{name}");
        }
        let unbounded = StagedChoices::default().described();
        assert!(unbounded.contains(&("concurrency", "unbounded".to_string())));
    }
}
