//! How the libraries' knobs are spelled on the command line: each the long flag clap gives the
//! knob's field in its command.

use std::collections::HashMap;
use std::sync::OnceLock;

use clap::CommandFactory;
use lgate_knobs::Knob;

/// The flag that sets the field `field` of a command's arguments when clap derives its name.
pub fn long(field: &str) -> String {
    format!("--{}", field.replace('_', "-"))
}

/// The long flag of knob `k` among the arguments `cli` takes, `None` when its command has no
/// such field or the field no long flag.
fn flag_in(cli: &clap::Command, k: Knob) -> Option<String> {
    let mut command = cli;
    for word in k.command() {
        command = command.find_subcommand(word)?;
    }
    let arg = (command.get_arguments()).find(|a| a.get_id().as_str() == k.field())?;
    arg.get_long().map(|l| format!("--{l}"))
}

/// The flag of knob `k`, as every library message spells it.
pub fn knob_flag(k: Knob) -> String {
    static FLAGS: OnceLock<HashMap<Knob, String>> = OnceLock::new();
    let flags = FLAGS.get_or_init(|| {
        let cli = crate::Cli::command();
        (Knob::ALL.into_iter())
            .filter_map(|k| Some((k, flag_in(&cli, k)?)))
            .collect()
    });
    flags.get(&k).cloned().unwrap_or_else(|| long(k.field()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_is_a_flag_of_its_command() {
        let cli = crate::Cli::command();
        for k in Knob::ALL {
            let flag = flag_in(&cli, k);
            assert!(
                flag.is_some(),
                "{k:?}: {:?} takes no {}",
                k.command(),
                k.field()
            );
            assert_eq!(flag, Some(knob_flag(k)), "{k:?}");
        }
        assert_eq!(knob_flag(Knob::Output), "--output");
        assert_eq!(knob_flag(Knob::ScreenReps), "--screen-reps");
    }
}
