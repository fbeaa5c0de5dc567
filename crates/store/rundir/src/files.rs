//! The names of the files a run directory holds, in one place: every writer and reader takes
//! them from here.

/// Who ran where and how (`RunMeta`).
pub const META_FILE: &str = "meta.json";
/// One binary record per pair test, appended as tests finish (`JournalFormat::Binary`).
pub const JOURNAL_FILE: &str = "journal.bin";
/// One JSON line per pair test, on request (`JournalFormat::Json`).
pub const JOURNAL_JSON_FILE: &str = "journal.jsonl";
/// The folder of the distance matrices.
pub const MATRICES_DIR: &str = "matrices";
/// The index of the matrices (`MatrixIndex`), inside the run directory.
pub const MATRIX_INDEX_FILE: &str = "matrices/index.json";
/// Which pairs of a staged run were measured, inside `matrices/`.
pub const MASK_FILE: &str = "measured.csv";
/// The folder of a staged run's screening by hosts (`HostBlocks`).
pub const HOSTS_DIR: &str = "hosts";
/// What the host files hold (`HostIndex`).
pub const HOST_INDEX_FILE: &str = "hosts/index.json";
/// Every pair inside each host, per screening size (Parquet).
pub const BLOCKS_FILE: &str = "hosts/blocks.parquet";
/// The pairs measured between hosts, per screening size (Parquet).
pub const BETWEEN_FILE: &str = "hosts/between.parquet";
/// Per two hosts (and inside each), the median and quartiles of their pairs (Parquet).
pub const HOST_MATRIX_FILE: &str = "hosts/host_matrix.parquet";
/// The PLogP parameters per pair and size (Parquet).
pub const MEASUREMENTS_FILE: &str = "measurements.parquet";
/// The same table as CSV (`measure --csv`).
pub const MEASUREMENTS_CSV_FILE: &str = "measurements.csv";
/// Every repetition (`measure --raw`, Parquet).
pub const RAW_FILE: &str = "raw.parquet";
/// Every repetition as CSV (`measure --raw --csv`).
pub const RAW_CSV_FILE: &str = "raw.csv";
/// The run's health: slow ranks, hosts and pairs, spreads, warnings (`Report`).
pub const REPORT_FILE: &str = "report.json";
/// A staged run's screening round trips per pair and size.
pub const SCREEN_TABLE: &str = "screen.csv";
/// A ping-pong run's round trips per pair and size.
pub const PINGPONG_TABLE: &str = "pingpong.csv";
/// The folder of a run's stored clusterings (`ClusteredIndex` and their topologies).
pub const CLUSTERED_DIR: &str = "clustered";
/// Their index, inside the run directory.
pub const CLUSTERED_INDEX_FILE: &str = "clustered/index.json";
/// The one-page HTML report `report` writes by default.
pub const REPORT_HTML: &str = "report.html";
/// The heat map `plot heatmap` writes by default.
pub const HEATMAP_PNG: &str = "heatmap.png";
/// The PLogP curves `plot curves` writes by default.
pub const CURVES_PNG: &str = "curves.png";
/// The dendrogram `plot dendrogram` writes by default.
pub const DENDROGRAM_PNG: &str = "dendrogram.png";
/// What changed since an earlier run, as `plot diff` draws it by default (in the later run).
pub const DIFF_PNG: &str = "diff.png";
/// The broadcast times `plot bcast` writes by default, beside the tuning file.
pub const BCAST_PNG: &str = "bcast.png";

/// The files a run directory keeps for itself: its record and what was derived from it (the
/// folder `matrices/` aside).
pub const RUN_FILES: &[&str] = &[
    META_FILE,
    JOURNAL_FILE,
    JOURNAL_JSON_FILE,
    MEASUREMENTS_FILE,
    MEASUREMENTS_CSV_FILE,
    RAW_FILE,
    RAW_CSV_FILE,
    REPORT_FILE,
    SCREEN_TABLE,
    PINGPONG_TABLE,
];

/// What replacing a run (`--force`) removes besides [`RUN_FILES`]: its derived folders, and
/// the report and pictures made from it by default.
pub const MADE_FROM_THE_RUN: &[&str] = &[
    MATRICES_DIR,
    HOSTS_DIR,
    CLUSTERED_DIR,
    REPORT_HTML,
    HEATMAP_PNG,
    CURVES_PNG,
    DENDROGRAM_PNG,
    DIFF_PNG,
];
