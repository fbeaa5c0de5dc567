//! mpiGraph's output (LLNL): the send and receive bandwidth of every ordered pair of ranks.
//!
//! mpiGraph prints a header (`START mpiGraph`, `MsgSize`, `Times`, `Window`, `Procs`), progress
//! lines, then two tables of P rows of P values in MB/s (2^20 bytes per second), tab-separated:
//! `Send` (row i `host:i to`, column j: what i sent to j) and `Recv` (row i `host:i from`,
//! column j: what i received from j), each after a `max` and an `avg` line, and `END mpiGraph`.
//! The diagonal is 0. Memory: the two P x P tables.

use std::path::Path;

use ndarray::Array2;

use crate::ReadError;

/// One mpiGraph run read back.
#[derive(Debug, Clone)]
pub struct MpiGraphRun {
    /// The message size, bytes (`MsgSize`).
    pub message_bytes: usize,
    /// Iterations per pair (`Times`).
    pub times: usize,
    /// Messages in flight per iteration (`Window`).
    pub window: usize,
    /// Per rank its host, from the `host:rank` labels.
    pub hosts: Vec<String>,
    /// `send[[i, j]]`: the bandwidth from i to j as i measured it sending, MB/s.
    pub send: Array2<f64>,
    /// `recv[[i, j]]`: the bandwidth from j to i as i measured it receiving, MB/s.
    pub recv: Array2<f64>,
}

/// Whether `text` looks like mpiGraph's output (its first line).
pub fn is_mpigraph(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with("START mpiGraph"))
}

/// Reads mpiGraph's output (`path` names it in errors); every error names the line.
pub fn read_mpigraph(path: &Path, text: &str) -> Result<MpiGraphRun, ReadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(k, l)| (k + 1, l.trim_end_matches('\r')))
        .collect();
    let last = lines.len().max(1);
    let Some(&(start_line, _)) = lines.iter().find(|(_, l)| !l.trim().is_empty()) else {
        return Err(shape(1, "empty: no mpiGraph output".into()));
    };
    if !is_mpigraph(text) {
        return Err(shape(
            start_line,
            "not mpiGraph's output: it begins with `START mpiGraph`".into(),
        ));
    }
    // The header: `Key<TAB>number`.
    let header = |key: &str| -> Result<(usize, usize), ReadError> {
        let Some(&(line, l)) = lines
            .iter()
            .find(|(_, l)| l.split('\t').next().map(str::trim) == Some(key))
        else {
            return Err(shape(
                last,
                format!("the header has no `{key}` line (is the output cut short?)"),
            ));
        };
        let text = l.split('\t').nth(1).unwrap_or("").trim();
        let value = text.parse().map_err(|_| ReadError::NotANumber {
            path: path.to_path_buf(),
            line,
            column: 2,
            text: text.to_string(),
        })?;
        Ok((line, value))
    };
    let (_, message_bytes) = header("MsgSize")?;
    let (_, times) = header("Times")?;
    let (_, window) = header("Window")?;
    let (procs_line, procs) = header("Procs")?;
    if procs < 2 {
        return Err(shape(
            procs_line,
            format!("{procs} rank(s): mpiGraph's tables need at least 2"),
        ));
    }
    if procs > crate::pairs::MAX_RANKS {
        return Err(shape(
            procs_line,
            format!("{procs} ranks is beyond {}", crate::pairs::MAX_RANKS),
        ));
    }
    let (send_hosts, send) = table(path, &lines, "Send", "to", procs)?;
    let (recv_hosts, recv) = table(path, &lines, "Recv", "from", procs)?;
    if let Some(k) = (0..procs).find(|&k| send_hosts[k] != recv_hosts[k]) {
        return Err(shape(
            last,
            format!(
                "rank {k} is on `{}` in the Send table and on `{}` in the Recv table",
                send_hosts[k], recv_hosts[k]
            ),
        ));
    }
    if !lines.iter().any(|(_, l)| l.trim() == "END mpiGraph") {
        return Err(shape(
            last,
            "no `END mpiGraph` line: the output is cut short".into(),
        ));
    }
    Ok(MpiGraphRun {
        message_bytes,
        times,
        window,
        hosts: send_hosts,
        send,
        recv,
    })
}

/// One of the two tables: the hosts of its columns and its values.
fn table(
    path: &Path,
    lines: &[(usize, &str)],
    name: &str,
    row_word: &str,
    procs: usize,
) -> Result<(Vec<String>, Array2<f64>), ReadError> {
    let shape = |line: usize, message: String| ReadError::Shape {
        path: path.to_path_buf(),
        line,
        message,
    };
    let last = lines.last().map_or(1, |(k, _)| *k);
    let Some(at) = lines
        .iter()
        .position(|(_, l)| l.split('\t').next() == Some(name) && l.contains(':'))
    else {
        return Err(shape(
            last,
            format!("no `{name}` table (is the output cut short?)"),
        ));
    };
    let (head_line, head) = lines[at];
    let cells: Vec<&str> = head.split('\t').skip(1).filter(|c| !c.is_empty()).collect();
    if cells.len() != procs {
        return Err(shape(
            head_line,
            format!(
                "the {name} table's header names {} rank(s); Procs says {procs}",
                cells.len()
            ),
        ));
    }
    let mut hosts = Vec::with_capacity(procs);
    for (k, cell) in cells.iter().enumerate() {
        hosts.push(label(path, head_line, k + 2, cell, k)?.to_string());
    }
    let mut values = Array2::zeros((procs, procs));
    for i in 0..procs {
        let Some(&(line, l)) = lines.get(at + 1 + i) else {
            return Err(shape(
                last,
                format!("the {name} table has {i} of {procs} rows: the output is cut short"),
            ));
        };
        let mut cells = l.split('\t');
        let first = cells.next().unwrap_or("");
        let Some(rank_label) = first.strip_suffix(&format!(" {row_word}")) else {
            return Err(shape(
                line,
                format!(
                    "row {i} of the {name} table should begin with `host:{i} {row_word}`; \
                     found `{first}` (the output is cut short or interleaved)"
                ),
            ));
        };
        let host = label(path, line, 1, rank_label, i)?;
        if host != hosts[i] {
            return Err(shape(
                line,
                format!(
                    "rank {i} is on `{host}` here and on `{}` in the header",
                    hosts[i]
                ),
            ));
        }
        let row: Vec<&str> = cells.filter(|c| !c.trim().is_empty()).collect();
        if row.len() != procs {
            return Err(shape(
                line,
                format!(
                    "{} value(s) in row {i} of the {name} table; Procs says {procs} (the output \
                     is cut short)",
                    row.len()
                ),
            ));
        }
        for (j, cell) in row.iter().enumerate() {
            let column = j + 2;
            let v: f64 = cell.trim().parse().map_err(|_| ReadError::NotANumber {
                path: path.to_path_buf(),
                line,
                column,
                text: cell.trim().to_string(),
            })?;
            let ok = v.is_finite() && if i == j { v == 0.0 } else { v > 0.0 };
            if !ok {
                return Err(ReadError::Value {
                    path: path.to_path_buf(),
                    line,
                    column,
                    problem: format!(
                        "{v} is not a bandwidth of {} (finite, {})",
                        if i == j { "a rank to itself" } else { "a pair" },
                        if i == j { "0" } else { "above 0 MB/s" }
                    ),
                });
            }
            values[[i, j]] = v;
        }
    }
    Ok((hosts, values))
}

/// The host of a `host:rank` label, checking that the rank is `expected`.
fn label<'a>(
    path: &Path,
    line: usize,
    column: usize,
    cell: &'a str,
    expected: usize,
) -> Result<&'a str, ReadError> {
    let bad = |problem: String| ReadError::Value {
        path: path.to_path_buf(),
        line,
        column,
        problem,
    };
    let cell = cell.trim();
    let (host, rank) = cell
        .rsplit_once(':')
        .ok_or_else(|| bad(format!("`{cell}` is not a `host:rank` label")))?;
    if host.is_empty() || rank.parse::<usize>().ok() != Some(expected) {
        return Err(bad(format!(
            "`{cell}` should be the label of rank {expected} (`host:{expected}`)"
        )));
    }
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mpiGraph 1.5's output for 4 ranks on one host (`mpirun -np 4 mpiGraph 65536 10 10`),
    /// also a fuzz seed.
    fn four() -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../fuzz/seeds/mpigraph_output/four-ranks.out"),
        )
        .unwrap()
    }

    fn read(text: &str) -> Result<MpiGraphRun, String> {
        read_mpigraph(Path::new("mg.out"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn a_real_output_is_read() {
        let run = read(&four()).unwrap();
        assert_eq!((run.message_bytes, run.times, run.window), (65536, 10, 10));
        assert_eq!(run.hosts, vec!["vm"; 4]);
        assert_eq!(run.send[[0, 3]], 6768.618);
        assert_eq!(run.recv[[2, 0]], 8058.194);
        assert_eq!(run.recv[[3, 3]], 0.0);
    }

    #[test]
    fn host_names_with_colons_keep_them() {
        let text = four().replace("vm:", "node:a:");
        assert_eq!(read(&text).unwrap().hosts[0], "node:a");
    }

    #[test]
    fn broken_outputs_name_the_line() {
        let four = four();
        // Cut short in the Recv table.
        let cut: String = four.lines().take(26).collect::<Vec<_>>().join("\n");
        let e = read(&cut).unwrap_err();
        assert!(e.contains("mg.out:26") && e.contains("cut short"), "{e}");
        // A value that is not a number.
        let e = read(&four.replace("2719.898", "27x9")).unwrap_err();
        assert_eq!(e, "mg.out:16, column 3: `27x9` is not a number");
        // A negative or zero bandwidth between two ranks.
        let e = read(&four.replace("2719.898", "0.000")).unwrap_err();
        assert!(
            e.starts_with("mg.out:16, column 3: 0 is not a bandwidth"),
            "{e}"
        );
        // A row missing.
        let e = read(&four.replace("vm:2 to\t5344.228\t5593.512\t0.000\t3535.650\t\n", ""))
            .unwrap_err();
        assert!(
            e.starts_with("mg.out:18, column 1: `vm:3` should be the label of rank 2"),
            "{e}"
        );
        // A row too short.
        let e = read(&four.replace("\t3535.650\t\n", "\t\n")).unwrap_err();
        assert!(e.starts_with("mg.out:18: 3 value(s) in row 2"), "{e}");
        // Procs and the tables disagree.
        let e = read(&four.replace("Procs\t4", "Procs\t5")).unwrap_err();
        assert!(e.contains("header names 4 rank(s); Procs says 5"), "{e}");
        // Ranks out of order.
        let e = read(&four.replace("Send\tvm:0\tvm:1", "Send\tvm:1\tvm:0")).unwrap_err();
        assert!(e.contains("should be the label of rank 0"), "{e}");
        // Not mpiGraph at all.
        let e = read("i,j,value\n0,1,2\n").unwrap_err();
        assert!(e.starts_with("mg.out:1: not mpiGraph's output"), "{e}");
        // No end line.
        let e = read(four.trim_end().trim_end_matches("END mpiGraph")).unwrap_err();
        assert!(e.contains("END mpiGraph"), "{e}");
        // A missing header line.
        let e = read(&four.replace("Window\t10\n", "")).unwrap_err();
        assert!(e.contains("no `Window` line"), "{e}");
    }
}
