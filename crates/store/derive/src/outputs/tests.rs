//! The derived outputs: tests.

use super::*;

#[test]
fn a_pingpong_takes_its_matrix_sizes_among_those_it_measures() {
    let sizes = |o: OutputOptions| o.matrix_sizes.iter().map(|m| m.0).collect::<Vec<_>>();
    let o = OutputOptions::from_pingpong_flags(None, &[0, 1024, 4 << 20], Estimator::Median, false);
    assert_eq!(sizes(o.unwrap()), [0, 1024]);
    let o = OutputOptions::from_pingpong_flags(None, &[512, 8], Estimator::Median, false);
    assert_eq!(sizes(o.unwrap()), [8, 512]);
    let o = OutputOptions::from_pingpong_flags(None, &[8], Estimator::Median, false);
    assert_eq!(sizes(o.unwrap()), [8]);
    let e = OutputOptions::from_pingpong_flags(
        Some(vec![MessageSize(1024)]),
        &[4 << 20, 0],
        Estimator::Median,
        false,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "matrix size 1KiB was not measured (the ping-pong measured 0, 4MiB); choose {} among \
             those or add it to {}",
            lgate_knobs::Knob::MatrixSizes,
            lgate_knobs::Knob::Sizes
        )
    );
}
