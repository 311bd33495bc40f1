//! The floor under every durable write on this disk, measured without SQLite: what one commit's
//! sync costs at best, next to what the JSON store's atomic rewrite costs. `raise_vs_json` and
//! `create_vs_raw` in `perf/benches/compare.rs` cannot beat the ratios these numbers allow.
//!
//! ```text
//! cargo bench --bench fsync_floor          # FSYNC_ROUNDS=N to change the 400 rounds
//! ```
//!
//! Each round runs every case once, in an order that rotates from round to round, and the
//! medians are printed:
//!
//! * `overwrite N pages + fdatasync`: N 4 KiB pages written into a 16 MiB file that already
//!   exists, then synced: a commit into a WAL that is being reused;
//! * `append N pages + fdatasync`: the same into a file that grows: a commit into a new WAL;
//! * `JSON atomic rewrite`: what `perf/benches/compare.rs` times for the JSON store: a temp file
//!   written, fsynced, and renamed over the session's file.

use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Instant;

const PAGE: usize = 4096;
const WAL_PAGES: usize = 4096;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn overwrite(file: &mut File, round: usize, pages: usize, buf: &[u8]) {
    let at = (round * 7 % (WAL_PAGES - pages)) * PAGE;
    file.seek(SeekFrom::Start(at as u64)).expect("seek");
    file.write_all(&buf[..pages * PAGE]).expect("write");
    file.sync_data().expect("fdatasync");
}

fn append(file: &mut File, pages: usize, buf: &[u8]) {
    file.seek(SeekFrom::End(0)).expect("seek");
    file.write_all(&buf[..pages * PAGE]).expect("write");
    file.sync_data().expect("fdatasync");
}

fn json_rewrite(dir: &Path, round: usize) {
    let tmp = dir.join(".s000001.tmp");
    let mut f = File::create(&tmp).expect("tmp");
    let body = format!(
        r#"{{"session":"s000001","taint":"secret","untrusted":false,"created_by":null,"round":{round}}}"#
    );
    f.write_all(body.as_bytes()).expect("write");
    f.sync_all().expect("fsync");
    drop(f);
    fs::rename(&tmp, dir.join("s000001.json")).expect("rename");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and friends
    }
    let rounds: usize = std::env::var("FSYNC_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let dir = tempfile::tempdir().expect("temp dir");
    let buf = vec![0x5a_u8; 8 * PAGE];

    let mut reused = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("reused-wal"))
        .expect("reused");
    reused
        .write_all(&vec![0_u8; WAL_PAGES * PAGE])
        .expect("fill");
    reused.sync_all().expect("sync");
    let mut grown = File::create(dir.path().join("grown-wal")).expect("grown");
    let json_dir = dir.path().join("json");
    fs::create_dir(&json_dir).expect("json dir");
    json_rewrite(&json_dir, 0);

    let names = [
        "overwrite 1 page + fdatasync",
        "overwrite 4 pages + fdatasync",
        "overwrite 8 pages + fdatasync",
        "append 4 pages + fdatasync",
        "JSON atomic rewrite (temp file, fsync, rename)",
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); names.len()];
    for round in 0..rounds {
        for k in 0..names.len() {
            let case = (k + round) % names.len();
            let t = Instant::now();
            match case {
                0 => overwrite(&mut reused, round, 1, &buf),
                1 => overwrite(&mut reused, round, 4, &buf),
                2 => overwrite(&mut reused, round, 8, &buf),
                3 => append(&mut grown, 4, &buf),
                _ => json_rewrite(&json_dir, round),
            }
            times[case].push(t.elapsed().as_nanos() as f64 / 1e3);
        }
    }
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    for (name, m) in names.iter().zip(&medians) {
        println!("{name}: {m:.1} µs");
    }
    println!(
        "JSON rewrite / one-page overwrite: {:.2} (the most raise_vs_json can reach here)",
        medians[4] / medians[0]
    );
    println!("{rounds} rounds, median of each");
}
