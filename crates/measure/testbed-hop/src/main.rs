//! `lgate-testbed-hop TAP_A TAP_B DELAY_US JITTER_US [SEED]`: a switch hop of the emulated
//! cluster that holds every frame DELAY_US microseconds, give or take JITTER_US.

use anyhow::Context;
use clap::Parser;
use lgate_testbed_hop::{relay, tighten_timer_slack, HopDelay, Tap};
use std::time::Duration;

/// A store-and-forward hop between two TAP devices, with a delay and its jitter.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// The TAP device on one side (it exists already: `ip tuntap add mode tap`).
    tap_a: String,
    /// The TAP device on the other side.
    tap_b: String,
    /// How long each frame is held, in microseconds.
    #[arg(value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    delay_us: u64,
    /// The most a frame's delay differs from DELAY_US (uniform, order kept), in microseconds.
    #[arg(value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    jitter_us: u64,
    /// The jitter's seed.
    #[arg(default_value_t = 0)]
    seed: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let hop = HopDelay {
        delay: Duration::from_micros(args.delay_us),
        jitter: Duration::from_micros(args.jitter_us),
    };
    let a = Tap::attach(&args.tap_a)?;
    let b = Tap::attach(&args.tap_b)?;
    tighten_timer_slack();
    relay(&a, &b, hop, args.seed).context("lgate-testbed-hop")
}
