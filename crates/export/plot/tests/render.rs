//! Every plot rendered for simulated runs of 64 and 1024 ranks: PNGs decode at the figure's
//! size; SVGs parse and hold the colour bar and one boundary line per group edge and level.

use std::path::{Path, PathBuf};

use lgate_plot::{Curves, Dendrogram, Figure, Heatmap};
use lgate_rundir::MessageSize;
use lgate_rundir::RunDir;
use lgate_simulate::{preset, SimulateOptions, Simulation};
use lgate_topology::{Level, Topology};
use quick_xml::events::Event;

/// A FRAM-like run of `ranks` ranks (nodes of 32) with sizes 0 and 1 KiB.
fn simulated(dir: &Path, ranks: usize) -> PathBuf {
    let nodes = ranks / 32;
    let model = preset("fram")
        .unwrap()
        .with_machine(&format!("node={nodes},socket=2,core=16"))
        .unwrap();
    let mut options = SimulateOptions::new(&model, 1024, 5);
    options.sizes = vec![0, 1024];
    options.outputs.matrix_sizes = vec![MessageSize(0)];
    options.outputs.features = false;
    let path = dir.join(format!("run-{ranks}"));
    let run = RunDir::create(&path, false).unwrap();
    Simulation::new(&model, &options)
        .unwrap()
        .write(&run)
        .unwrap();
    path
}

/// The true node and socket levels of a run with nodes of 32 ranks dealt round-robin over 2
/// sockets.
fn truth(ranks: usize) -> Topology {
    let nodes: Vec<Vec<usize>> = (0..ranks / 32)
        .map(|n| (n * 32..n * 32 + 32).collect())
        .collect();
    let sockets: Vec<Vec<usize>> = (0..ranks / 16)
        .map(|s| {
            let (node, socket) = (s / 2, s % 2);
            (0..16).map(|k| node * 32 + socket + 2 * k).collect()
        })
        .collect();
    Topology::from_levels(
        ranks,
        vec![Level::new("node", nodes), Level::new("socket", sockets)],
    )
    .unwrap()
}

fn check_png(figure: &impl Figure) {
    let png = lgate_plot::to_png(figure).unwrap();
    let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png).unwrap();
    assert_eq!(
        (image.width(), image.height()),
        figure.size(),
        "the PNG has the figure's size"
    );
    let rgb = image.to_rgb8();
    let first = rgb.get_pixel(0, 0);
    assert!(
        rgb.pixels().any(|p| p != first),
        "the PNG is not one flat colour"
    );
}

/// The SVG's elements: (name, attributes).
fn svg_elements(svg: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut out = Vec::new();
    loop {
        match reader.read_event().expect("the SVG parses") {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => {
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        (
                            String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                            String::from_utf8_lossy(&a.value).into_owned(),
                        )
                    })
                    .collect();
                out.push((
                    String::from_utf8_lossy(e.name().as_ref()).into_owned(),
                    attrs,
                ));
            }
            _ => {}
        }
    }
    out
}

fn attr<'a>(e: &'a (String, Vec<(String, String)>), key: &str) -> Option<&'a str> {
    e.1.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

#[test]
fn plots_of_64_and_1024_ranks() {
    let dir = tempfile::tempdir().unwrap();
    for ranks in [64, 1024] {
        let run = simulated(dir.path(), ranks);
        let input = lgate_cluster::load(&run, None).unwrap();
        let topology = truth(ranks);

        let plain = Heatmap::new(input.dense().unwrap(), "t(0)", "us");
        let ordered = Heatmap::new(input.dense().unwrap(), "t(0)", "us")
            .with_topology(&topology)
            .unwrap();
        check_png(&plain);
        check_png(&ordered);

        // Boundaries: every node edge at the node level, every socket edge at the socket level.
        let b = ordered.boundaries();
        assert_eq!(b[0].1.len(), ranks / 32 - 1, "{ranks}: node edges");
        assert_eq!(b[1].1.len(), ranks / 16 - 1, "{ranks}: socket edges");
        let svg = lgate_plot::to_svg(&ordered).unwrap();
        let elements = svg_elements(&svg);
        let images: Vec<_> = elements.iter().filter(|e| e.0 == "image").collect();
        assert_eq!(images.len(), 2, "the matrix and the colour bar");
        assert!(
            images.iter().all(|i| attr(i, "href")
                .unwrap()
                .starts_with("data:image/png;base64,")),
            "images are inlined as PNG"
        );
        let bar = images
            .iter()
            .find(|i| attr(i, "width") == Some("22"))
            .expect("a colour bar");
        assert_eq!(attr(bar, "height"), Some("760"));
        let boundaries = elements
            .iter()
            .filter(|e| e.0 == "polyline" && attr(e, "stroke") == Some("#FFFFFF"))
            .count();
        assert_eq!(
            boundaries,
            2 * (b[0].1.len() + b[1].1.len()),
            "{ranks}: a horizontal and a vertical line per edge"
        );
        let texts = svg.matches("<text").count();
        assert!(texts > 10, "labels and the colour bar's ticks");
        // The axes name groups, not ranks in topology order (which look random); the levels'
        // lines are told apart in the caption; lower values are said to be closer.
        // (64 ranks: the 4 sockets, round-robin ranks too many to write; 1024: every second
        // of the 32 nodes, by their ranks.)
        let group_label = if ranks == 64 { "socket 0\n" } else { "64-95\n" };
        assert!(svg.contains(group_label), "{ranks}: group labels");
        assert!(
            svg.contains("node thick, socket thin"),
            "{ranks}: boundaries named"
        );
        assert!(svg.contains("lower: closer"));
        assert!(svg.contains("95th percentile"), "the clipping is said");

        // A level of one rank each at 1024 ranks would be lines under a pixel apart: left
        // out, and said.
        let mut levels = topology.levels().to_vec();
        levels.push(Level::new("core", (0..ranks).map(|r| vec![r]).collect()));
        let with_cores = Topology::from_levels(ranks, levels).unwrap();
        let dense = lgate_plot::to_svg(
            &Heatmap::new(input.dense().unwrap(), "t(0)", "us")
                .with_topology(&with_cores)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            dense.contains("core too dense to draw"),
            ranks == 1024,
            "{ranks}: 1 rank per group is drawn at 64 ranks (12 px apart), not at 1024"
        );

        let curves = Curves::of_run(&run, None).unwrap();
        let names: Vec<&str> = curves.lines().iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["same socket", "same node", "different node"]);
        assert_eq!(curves.eager_limits().len(), 1, "the simulated eager limit");
        check_png(&curves);
        svg_elements(&lgate_plot::to_svg(&curves).unwrap());

        let pairs = Curves::of_run(&run, Some(&[(0, 1), (0, 2)])).unwrap();
        assert_eq!(pairs.lines().len(), 2);
        assert!(Curves::of_run(&run, Some(&[(0, ranks + 5)])).is_err());

        let dendrogram = Dendrogram::new(&topology, "truth");
        check_png(&dendrogram);
        svg_elements(&lgate_plot::to_svg(&dendrogram).unwrap());
    }
}

#[test]
fn a_topology_of_other_ranks_is_an_error() {
    let m = lgate_matrix::DistanceMatrix::new(ndarray_like(4), None).unwrap();
    let t = truth(64);
    let err = Heatmap::new(&m, "x", "us").with_topology(&t).unwrap_err();
    assert!(
        err.to_string().contains("the matrix of 4 ranks lacks"),
        "{err}"
    );
}

fn ndarray_like(n: usize) -> ndarray::Array2<f64> {
    ndarray::Array2::from_shape_fn((n, n), |(i, j)| (i as f64 - j as f64).abs())
}

#[test]
fn broadcast_times_and_speedups() {
    use lgate_bcast::{BroadcastTable, Timing, Tuning};
    let dir = tempfile::tempdir().unwrap();
    let mut timings = Vec::new();
    for size in [0usize, 1024, 65536, 1 << 20] {
        for (k, name) in [
            "MPI_Bcast",
            "binomial",
            "chain",
            "flat",
            "binary",
            "split-binary",
            "scatter-allgather",
            "pipeline:8KiB",
            "pipeline:64KiB",
            "magpie(flat/binomial)@1",
        ]
        .iter()
        .enumerate()
        {
            let t = 5.0 + size as f64 * (0.01 + 0.002 * k as f64);
            timings.push(Timing {
                candidate: name.to_string(),
                size,
                rounds: 10,
                min_us: t,
                median_us: t,
                p90_us: t,
                mean_us: t,
                trimmed_us: t,
                correct: name != &"chain",
            });
        }
    }
    let tree = lgate_topology::TopologyNode::cluster(vec![
        lgate_topology::TopologyNode::group(vec![0, 1]),
        lgate_topology::TopologyNode::group(vec![2, 3]),
    ]);
    let tuning = Tuning::from_timings(timings, 4, 0, Some(&tree), Default::default());
    let path = dir.path().join("bcast-tuning.json");
    std::fs::write(&path, serde_json::to_string(&tuning).unwrap()).unwrap();
    let figure = lgate_plot::BcastFigure::of_file(&path).unwrap();
    let names = figure.names();
    assert_eq!(names[0], "MPI_Bcast");
    assert_eq!(names.len(), 8, "MPI_Bcast and the 7 fastest: {names:?}");
    assert!(!names.contains(&"chain"), "wrong broadcasts are not drawn");
    check_png(&figure);
    let svg = lgate_plot::to_svg(&figure).unwrap();
    assert!(svg.contains("speedup over MPI_Bcast"));
    std::fs::write(dir.path().join("x.json"), "{}").unwrap();
    assert!(lgate_plot::BcastFigure::of_file(&dir.path().join("x.json")).is_err());
}
