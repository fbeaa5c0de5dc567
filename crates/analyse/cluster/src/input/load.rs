//! Reading what `cluster` and `score` are given: a run directory's candidate matrices (or its
//! host blocks), a matrix file, and a placement's truth.

use super::*;

/// Which pairs of an `n`-item matrix were measured, from its mask file; `None` when the file
/// cannot be read or does not fit.
pub(crate) fn measured_mask(mask: &std::path::Path, n: usize) -> Option<ndarray::Array2<bool>> {
    let read = lgate_matrix::read_matrix(mask).ok()?;
    let values = read.matrix.values();
    if values.nrows() != n || values.ncols() != n {
        return None;
    }
    Some(values.mapv(|v| v > 0.5))
}

/// The inputs `cluster` tries when no matrix is named: a run's candidate matrices (a staged
/// run's screening sizes; its host blocks when it has no dense matrices), else its default
/// matrix, or the one matrix of a file.
pub fn load_candidates(path: &Path) -> Result<Vec<ClusterInput>, InputError> {
    if !path.is_dir() {
        return Ok(vec![load(path, None)?]);
    }
    let run = lgate_rundir::RunDir::open(path)?;
    if by_hosts_only(&run) {
        return load_by_hosts(path, None);
    }
    let index = run.read_matrices()?;
    let names: Vec<String> = index
        .default_candidates()
        .iter()
        .map(|e| e.name.clone())
        .collect();
    if names.len() < 2 {
        return Ok(vec![load(path, None)?]);
    }
    let mut inputs: Vec<ClusterInput> = (names.iter())
        .map(|n| load(path, Some(n)))
        .collect::<Result<_, _>>()?;
    // Each size's matrix, shared by the others of the same items.
    type Size = (Vec<usize>, Arc<ndarray::Array2<f64>>);
    let matrices: Vec<Option<Size>> = (inputs.iter())
        .map(|i| (i.dense()).map(|m| (i.ranks.clone(), Arc::new(m.values().clone()))))
        .collect();
    for (k, input) in inputs.iter_mut().enumerate() {
        input.other_sizes = (matrices.iter().enumerate())
            .filter(|&(o, _)| o != k)
            .filter_map(|(_, m)| m.as_ref())
            .filter(|(ranks, _)| *ranks == input.ranks)
            .map(|(_, m)| m.clone())
            .collect();
    }
    let mut tests = screening_tests(&run, &index);
    for input in inputs.iter_mut() {
        input.tests = tests_for(&mut tests, &index, input);
    }
    Ok(inputs)
}

/// Per screening size, each pair's screening tests (ranks `i < j`) as the matrices' estimator
/// takes them, from a staged run's screening table; empty when the run kept none, when its
/// estimator is not a quantile the table holds, or when no pair was tested more than once
/// and none has a floor (each pair's one value is then its matrix entry).
fn screening_tests(
    run: &lgate_rundir::RunDir,
    index: &lgate_rundir::MatrixIndex,
) -> std::collections::HashMap<usize, crate::by_hosts::PairTests> {
    let mut out: std::collections::HashMap<usize, crate::by_hosts::PairTests> = Default::default();
    let file = run.file(lgate_rundir::files::SCREEN_TABLE);
    let pick: fn(&lgate_rundir::ScreenRow) -> f64 = match index.estimator {
        lgate_rundir::Estimator::Median => |r| r.median_us,
        lgate_rundir::Estimator::P10 => |r| r.p10_us,
        lgate_rundir::Estimator::P90 => |r| r.p90_us,
        _ => return out,
    };
    if !file.is_file() {
        return out;
    }
    let Ok(rows) = lgate_rundir::read_screen_table(&file) else {
        return out;
    };
    // The stages a matrix entry is the median of: alone re-tests are not among them.
    for r in rows.iter().filter(|r| r.stage != "alone") {
        let key = (r.i.min(r.j), r.i.max(r.j));
        let size = out.entry(r.size_bytes).or_default();
        size.values.entry(key).or_default().push(pick(r));
        let floor = size.floors.entry(key).or_insert(f64::INFINITY);
        *floor = floor.min(r.min_us);
    }
    out.retain(|_, tests| {
        tests.values.values().any(|t| t.len() > 1) || tests.floors.values().any(|f| f.is_finite())
    });
    out
}

/// The screening tests of `input`'s size, by its items, taken from `tests`.
fn tests_for(
    tests: &mut std::collections::HashMap<usize, crate::by_hosts::PairTests>,
    index: &lgate_rundir::MatrixIndex,
    input: &ClusterInput,
) -> Option<Arc<crate::by_hosts::PairTests>> {
    let name = input.matrix.as_deref()?;
    let size = index.find(name)?.size_bytes?;
    let by_rank = tests.get(&size)?;
    let item: std::collections::HashMap<usize, usize> = input
        .ranks
        .iter()
        .enumerate()
        .map(|(k, &r)| (r, k))
        .collect();
    let of_item = |&(i, j): &(usize, usize)| {
        let (a, b) = (*item.get(&i)?, *item.get(&j)?);
        Some((a.min(b), a.max(b)))
    };
    Some(Arc::new(crate::by_hosts::PairTests {
        values: (by_rank.values.iter())
            .filter_map(|(pair, t)| Some((of_item(pair)?, t.clone())))
            .collect(),
        floors: (by_rank.floors.iter())
            .filter_map(|(pair, &f)| Some((of_item(pair)?, f)))
            .collect(),
    }))
}

/// [`load`], and when the matrix chosen is one of a run's screening sizes, the other sizes'
/// matrices with it (see [`ClusterInput::other_sizes`]), as `cluster` reads them.
pub fn load_with_sizes(path: &Path, matrix: Option<&str>) -> Result<ClusterInput, InputError> {
    let Some(name) = matrix.filter(|_| path.is_dir()) else {
        return load(path, matrix);
    };
    let mut input = load(path, Some(name))?;
    if input.dense().is_none() {
        return Ok(input);
    }
    let run = lgate_rundir::RunDir::open(path)?;
    let index = run.read_matrices()?;
    let chosen = index.find(name).map(|e| e.name.clone());
    let names: Vec<String> = (index.default_candidates().iter())
        .map(|e| e.name.clone())
        .collect();
    if names.len() < 2 || !chosen.as_ref().is_some_and(|c| names.contains(c)) {
        return Ok(input);
    }
    for other in names.iter().filter(|n| Some(*n) != chosen.as_ref()) {
        let read = load(path, Some(other))?;
        if let Some(m) = read.dense().filter(|_| read.ranks == input.ranks) {
            input.other_sizes.push(Arc::new(m.values().clone()));
        }
    }
    input.tests = tests_for(&mut screening_tests(&run, &index), &index, &input);
    Ok(input)
}

/// Clusters each input with `fit` and keeps the one whose topology has the most levels (of
/// equals, the one whose weakest split stands apart most, else the first); with several
/// inputs, also a line saying what each gave.
///
/// Separations are ratios, so they compare across matrices of different units: on a staged
/// run over a slow network the 0 B screening can show as many levels as the 64 KiB one, one of
/// them made of noise (a split 1.3x apart against 7x).
pub fn choose_by_levels<E: From<InputError>>(
    inputs: Vec<ClusterInput>,
    mut fit: impl FnMut(&ClusterInput) -> Result<crate::Tree, E>,
) -> Result<(ClusterInput, crate::Tree, Option<String>), E> {
    choose_by_sure_levels(inputs, |i| fit(i).map(|t| (t, None)))
}

/// [`choose_by_levels`] where `fit` also tells how many of the levels it found are sure (kept
/// by their confidence), when it knows: the input with the most sure levels is kept first.
/// So a matrix whose levels the resamples do not bear out gives way to one whose fewer levels
/// they do.
pub fn choose_by_sure_levels<E: From<InputError>>(
    inputs: Vec<ClusterInput>,
    mut fit: impl FnMut(&ClusterInput) -> Result<(crate::Tree, Option<usize>), E>,
) -> Result<(ClusterInput, crate::Tree, Option<String>), E> {
    let several = inputs.len() > 1;
    let mut best: Option<((usize, usize, f64), ClusterInput, crate::Tree)> = None;
    let mut tried = Vec::new();
    for input in inputs {
        let (tree, sure) = fit(&input)?;
        let levels = input.topology(&tree)?.levels().len();
        let name = input
            .source
            .rsplit_once(" (")
            .map_or(input.source.as_str(), |(_, n)| n.trim_end_matches(')'));
        tried.push(match sure {
            Some(sure) if sure < levels => format!("{name} {levels} ({sure} sure)"),
            _ => format!("{name} {levels}"),
        });
        let rank = (
            sure.unwrap_or(levels),
            levels,
            tree.weakest_separation().unwrap_or(0.0),
        );
        let better = |(k, l, s): &(usize, usize, f64)| {
            (rank.0, rank.1) > (*k, *l) || ((rank.0, rank.1) == (*k, *l) && rank.2 > *s)
        };
        if best.as_ref().is_none_or(|(r, _, _)| better(r)) {
            best = Some((rank, input, tree));
        }
    }
    let (_, input, tree) = best.ok_or_else(|| {
        E::from(InputError::Invalid {
            path: PathBuf::from("."),
            message: "no matrix to cluster".into(),
        })
    })?;
    let note = several.then(|| {
        format!(
            "matrix: tried each screening size (levels found: {}); kept {}",
            tried.join(", "),
            input.source
        )
    });
    Ok((input, tree, note))
}

/// Whether a run has host blocks and no dense matrices.
fn by_hosts_only(run: &lgate_rundir::RunDir) -> bool {
    run.has_hosts() && !run.file(lgate_rundir::MATRIX_INDEX_FILE).is_file()
}

/// A staged run's host blocks, one input per screening size (only `matrix`, such as `rtt:0`,
/// when given), its items the run's ranks.
pub fn load_by_hosts(path: &Path, matrix: Option<&str>) -> Result<Vec<ClusterInput>, InputError> {
    let run = lgate_rundir::RunDir::open(path)?;
    let meta = run.read_meta()?;
    let blocks = Arc::new(run.read_hosts()?);
    let index = &blocks.index;
    let mut warnings = Vec::new();
    let h = index.hosts.len();
    let between = match run.file(lgate_rundir::files::BETWEEN_FILE).is_file() {
        true if h <= crate::host_levels::MAX_HOSTS => {
            Some(Arc::new(HostBlocks::read_between(&run, index)?))
        }
        true => {
            warnings.push(format!(
                "{h} hosts: the levels above the hosts are decided on the host x host medians \
                 alone (the pairs between hosts are read up to {} hosts)",
                crate::host_levels::MAX_HOSTS
            ));
            None
        }
        false => None,
    };
    let file = run.file(lgate_rundir::files::HOST_INDEX_FILE);
    if index.ranks != meta.ranks.len() {
        return Err(InputError::Invalid {
            path: file,
            message: format!(
                "{} ranks, but meta.json has {}",
                index.ranks,
                meta.ranks.len()
            ),
        });
    }
    let names: Vec<String> = (index.sizes.iter())
        .map(|&m| format!("rtt:{}", MessageSize(m)))
        .collect();
    let chosen: Vec<usize> = match matrix {
        None => (0..names.len()).collect(),
        Some(name) => {
            vec![names
                .iter()
                .position(|n| n == name)
                .ok_or_else(|| InputError::Invalid {
                    path: file.clone(),
                    message: format!(
                        "no screening size `{name}` in the host blocks; this run has {}",
                        names.join(", ")
                    ),
                })?]
        }
    };
    let total = index.ranks * index.ranks.saturating_sub(1) / 2;
    let measured = index.pairs.inside_measured + index.pairs.between_measured;
    let filled = total.saturating_sub(measured);
    if meta.status == lgate_rundir::RunStatus::Running {
        warnings.push(format!(
            "{}: the run has not finished (meta.json says `running`: still measuring, or \
             stopped before its end); these host blocks hold what was derived before, and {}",
            path.display(),
            meta.how_to_finish(path)
        ));
    }
    if filled > 0 {
        warnings.push(format!(
            "{:.1}% of the pairs ({filled} of {total}) were not measured: clustered by hosts \
             (each host's pairs, and the median of the pairs measured between each two hosts)",
            100.0 * filled as f64 / total as f64
        ));
    }
    let placement = meta.known_placement();
    let hosts: Vec<String> = meta.ranks.iter().map(|r| r.host.clone()).collect();
    Ok(chosen
        .into_iter()
        .map(|k| ClusterInput {
            distances: Distances::ByHosts {
                blocks: blocks.clone(),
                k,
                between: between.clone(),
            },
            ranks: (0..index.ranks).collect(),
            job_size: index.ranks,
            hosts: Some(hosts.clone()),
            source: format!("{} ({})", file.display(), names[k]),
            matrix: Some(names[k].clone()),
            warnings: warnings.clone(),
            placement: Some(placement.clone()),
            filled: Some((filled, total)),
            mask: None,
            other_sizes: Vec::new(),
            tests: None,
        })
        .collect())
}

/// Reads a run directory (choosing `matrix`; by default `t`, or `rtt` for a ping-pong run) or a
/// matrix file.
///
/// Matrix names are those of `matrices/index.json` (`latency`, `rtt:0`, `t:1KiB`,
/// `features:0`, ...); `t` and `features` alone take the smallest size.
pub fn load(path: &Path, matrix: Option<&str>) -> Result<ClusterInput, InputError> {
    let invalid = |p: &Path, message: String| InputError::Invalid {
        path: p.to_path_buf(),
        message,
    };
    if !path.is_dir() {
        if matrix.is_some() {
            return Err(invalid(
                path,
                format!(
                    "{} picks a matrix of a run directory; this is a file",
                    Knob::Matrix
                ),
            ));
        }
        if path == Path::new("-") && !path.exists() {
            return Err(invalid(
                path,
                "standard input is not read: save the matrix to a file and give its name".into(),
            ));
        }
        let read = read_matrix(path)?;
        let n = read.matrix.len();
        return Ok(ClusterInput {
            ranks: (0..n).collect(),
            job_size: n,
            hosts: None,
            source: path.display().to_string(),
            matrix: None,
            warnings: read.warnings,
            distances: Distances::Dense(read.matrix),
            placement: None,
            filled: None,
            mask: None,
            other_sizes: Vec::new(),
            tests: None,
        });
    }
    let run = lgate_rundir::RunDir::open(path)?;
    if by_hosts_only(&run) {
        let mut inputs = load_by_hosts(path, matrix)?;
        // The largest screening size, as the dense default.
        return Ok(inputs.pop().expect("an index has sizes"));
    }
    let meta = run.read_meta()?;
    let index = run.read_matrices()?;
    let name = matrix.unwrap_or("t");
    let chosen = match matrix {
        Some(name) => index.find(name),
        None => index.default_matrix(),
    };
    let chosen = chosen.ok_or_else(|| {
        invalid(
            &run.file(lgate_rundir::MATRIX_INDEX_FILE),
            format!(
                "no matrix `{name}`; this run has {}",
                index.names().join(", ")
            ),
        )
    })?;
    let file = run.file(&chosen.path());
    let mut read = read_matrix(&file)?;
    if let Some(mask) = index.measured.as_ref().filter(|m| m.filled_pairs > 0) {
        read.warnings.push(format!(
            "{:.1}% of the pairs ({} of {}) were not measured: they hold {} (matrices/{} tells \
             which)",
            100.0 * mask.filled_share(),
            mask.filled_pairs,
            mask.filled_pairs + mask.measured_pairs,
            mask.filled_with,
            mask.file
        ));
    }
    if meta.status == lgate_rundir::RunStatus::Running {
        read.warnings.push(format!(
            "{}: the run has not finished (meta.json says `running`: still measuring, or \
             stopped before its end); these matrices hold what was derived before, and {}",
            path.display(),
            meta.how_to_finish(path)
        ));
    }
    let ranks = read
        .matrix
        .labels()
        .iter()
        .map(|l| l.parse::<usize>().ok().filter(|&r| r < meta.ranks.len()))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            invalid(
                &file,
                format!(
                    "its labels are not ranks of the run's {} ranks",
                    meta.ranks.len()
                ),
            )
        })?;
    Ok(ClusterInput {
        distances: Distances::Dense(read.matrix),
        ranks,
        job_size: meta.ranks.len(),
        hosts: Some(meta.ranks.iter().map(|r| r.host.clone()).collect()),
        source: format!("{} ({})", file.display(), chosen.name),
        matrix: Some(chosen.name.clone()),
        warnings: read.warnings,
        placement: Some(meta.known_placement()),
        filled: index
            .measured
            .as_ref()
            .map(|m| (m.filled_pairs, m.filled_pairs + m.measured_pairs)),
        mask: (index.measured.as_ref())
            .filter(|m| m.filled_pairs > 0)
            .map(|m| run.file(&format!("{}/{}", lgate_rundir::MATRICES_DIR, m.file))),
        other_sizes: Vec::new(),
        tests: None,
    })
}

/// Reads known placement: a run directory or its meta.json, or a JSON object with `levels`
/// (see [`lgate_rundir::KnownPlacement::read`]).
pub fn read_truth(path: &Path) -> Result<Truth, InputError> {
    Ok(Truth::read(path)?)
}
