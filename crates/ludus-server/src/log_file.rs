//! The log file of `logger.file`, rotated by size when `logger.rotation` is
//! on, as Nakama's (lumberjack's) rules say: past `logger.max_size`
//! megabytes the file is renamed `name-2006-01-02T15-04-05.000.ext` (UTC)
//! and a new one begun; then backups beyond `logger.max_backups` or older
//! than `logger.max_age` days are deleted, and the rest gzipped when
//! `logger.compress` is on (on a thread of its own, off the logging path).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When to rotate and what to keep.
#[derive(Debug, Clone)]
pub(crate) struct Rotation {
    pub max_bytes: u64,
    /// `None` keeps backups of any age.
    pub max_age: Option<Duration>,
    /// `0` keeps every backup.
    pub max_backups: usize,
    pub compress: bool,
}

/// An append-only log file; a `Mutex<LogFile>` is the subscriber's writer.
pub(crate) struct LogFile {
    path: PathBuf,
    file: File,
    size: u64,
    rotation: Option<Rotation>,
}

impl LogFile {
    /// Opens (or creates) `path` for appending.
    pub(crate) fn open(path: &Path, rotation: Option<Rotation>) -> io::Result<LogFile> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let size = file.metadata()?.len();
        Ok(LogFile {
            path: path.to_owned(),
            file,
            size,
            rotation,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let backup = backup_name(&self.path, SystemTime::now());
        std::fs::rename(&self.path, &backup)?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = 0;
        if let Some(rotation) = self.rotation.clone() {
            let path = self.path.clone();
            // Deleting and compressing backups must not hold up logging.
            std::thread::spawn(move || prune(&path, &rotation, SystemTime::now()));
        }
        Ok(())
    }
}

impl Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(rotation) = &self.rotation
            && self.size > 0
            && self.size + buf.len() as u64 > rotation.max_bytes
        {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// `dir/name.ext` becomes `dir/name-2006-01-02T15-04-05.000.ext`.
fn backup_name(path: &Path, at: SystemTime) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let stamp = utc_stamp(at);
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{stamp}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{stamp}"),
    };
    path.with_file_name(name)
}

/// `2006-01-02T15-04-05.000` in UTC.
fn utc_stamp(at: SystemTime) -> String {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}.{:03}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The calendar date of a day count since 1970-01-01 (Howard Hinnant's
/// algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The backups of `path`, newest first, with their time of rotation.
fn backups(path: &Path) -> Vec<(PathBuf, SystemTime)> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let stem = path
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let mut found: Vec<(PathBuf, SystemTime)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix(&format!("{stem}-"))?;
            let rest = rest.strip_suffix(".gz").unwrap_or(rest);
            let stamp = rest.strip_suffix(ext.as_str())?;
            Some((entry.path(), parse_stamp(stamp)?))
        })
        .collect();
    found.sort_by_key(|b| std::cmp::Reverse(b.1));
    found
}

/// The inverse of [`utc_stamp`].
fn parse_stamp(stamp: &str) -> Option<SystemTime> {
    let b = stamp.as_bytes();
    if b.len() != 23 || b[4] != b'-' || b[10] != b'T' || b[19] != b'.' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss, ms) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    // Days from the civil date (the inverse of `civil_from_days`).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let millis = ((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000 + ms)
        .try_into()
        .ok()?;
    Some(UNIX_EPOCH + Duration::from_millis(millis))
}

/// Deletes backups beyond the count or age limits and gzips the rest.
fn prune(path: &Path, rotation: &Rotation, now: SystemTime) {
    for (i, (backup, at)) in backups(path).into_iter().enumerate() {
        let too_many = rotation.max_backups > 0 && i >= rotation.max_backups;
        let too_old = rotation
            .max_age
            .is_some_and(|age| now.duration_since(at).is_ok_and(|d| d > age));
        if too_many || too_old {
            let _ = std::fs::remove_file(&backup);
        } else if rotation.compress && backup.extension().is_none_or(|e| e != "gz") {
            let _ = gzip(&backup);
        }
    }
}

/// `file` becomes `file.gz`.
fn gzip(file: &Path) -> io::Result<()> {
    let mut gz_name = file.as_os_str().to_owned();
    gz_name.push(".gz");
    let out = File::create(&gz_name)?;
    let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    io::copy(&mut File::open(file)?, &mut encoder)?;
    encoder.finish()?.sync_all()?;
    std::fs::remove_file(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_and_read_back() {
        let at = UNIX_EPOCH + Duration::from_millis(1_136_214_245_123);
        assert_eq!(utc_stamp(at), "2006-01-02T15-04-05.123");
        assert_eq!(parse_stamp("2006-01-02T15-04-05.123"), Some(at));
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(parse_stamp(&utc_stamp(leap)), Some(leap));
        assert_eq!(parse_stamp("2006-01-02"), None);
    }

    #[test]
    fn the_file_rotates_past_its_size_and_old_backups_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ludus.log");
        let rotation = Rotation {
            max_bytes: 100,
            max_age: None,
            max_backups: 2,
            compress: false,
        };
        let mut log = LogFile::open(&path, Some(rotation.clone())).unwrap();
        for i in 0..5 {
            // Each line forces a rotation; stamps differ by the millisecond.
            log.write_all(format!("{i}{}\n", "x".repeat(80)).as_bytes())
                .unwrap();
            std::thread::sleep(Duration::from_millis(3));
        }
        log.flush().unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().starts_with('4'));
        // Prune synchronously for the test (rotation runs it on a thread).
        prune(&path, &rotation, SystemTime::now());
        let kept = backups(&path);
        assert_eq!(kept.len(), 2, "{kept:?}");
        let newest = std::fs::read_to_string(&kept[0].0).unwrap();
        assert!(newest.starts_with('3'), "{newest}");
    }

    #[test]
    fn compressed_backups_are_gzip_and_count_as_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ludus.log");
        let backup = backup_name(&path, SystemTime::now() - Duration::from_secs(60));
        std::fs::write(&backup, "old line\n").unwrap();
        let rotation = Rotation {
            max_bytes: 100,
            max_age: Some(Duration::from_secs(3600)),
            max_backups: 0,
            compress: true,
        };
        prune(&path, &rotation, SystemTime::now());
        let kept = backups(&path);
        assert_eq!(kept.len(), 1);
        assert!(kept[0].0.to_string_lossy().ends_with(".log.gz"), "{kept:?}");
        let mut text = String::new();
        io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(File::open(&kept[0].0).unwrap()),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "old line\n");
        // Past max_age it goes.
        prune(
            &path,
            &rotation,
            SystemTime::now() + Duration::from_secs(7200),
        );
        assert!(backups(&path).is_empty());
    }
}
