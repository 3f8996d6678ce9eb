//! The worker's operation journal: what a worker records about durable
//! operations so that a later worker process (after the host stopped this
//! one) can answer `reconcile_operation` truthfully.
//!
//! The journal is one append-only file, [`JOURNAL_FILE`], in a directory the
//! worker is given (a read-write root of its policy). Each record is one line:
//! the BLAKE3 hash of the record's JSON in 64 lowercase hex digits, a space,
//! the JSON, a newline. A record is written with one `write` and made durable
//! with `fsync` before the worker acts on it:
//!
//! - `started` (tool, operation key, fingerprint of the input) before the
//!   operation runs;
//! - `finished` (the status) after it ran and before the answer is sent.
//!
//! Reading it back, a record that is cut short or whose hash does not match
//! can only be the last one (every earlier record was synced before the next
//! was written): it is a torn write, it is dropped and the file is truncated
//! to the records before it. A torn `finished` record therefore reads as an
//! operation that started and has no recorded outcome, never as a completed
//! one; a torn `started` record reads as an operation that never started
//! (and it did not: the operation runs only after the record was synced). A
//! bad record followed by good ones is corruption, and the journal is
//! refused.
//!
//! The file is locked (`flock`, exclusive) for as long as the [`Journal`]
//! lives, so two workers never write one journal; the lock is released when
//! the worker process ends, however it ends.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::message::{OperationStatus, Payload};
use crate::token::Token;

/// The journal's file name inside the directory the worker is given.
pub const JOURNAL_FILE: &str = "splash-operations.journal";

/// The domain of an input fingerprint.
const INPUT_DOMAIN: &[u8] = b"splash-operation-input-v1";

/// Why a journal could not be opened or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// Reading, writing, syncing or locking the journal file failed.
    #[error("operation journal `{path}`: {error}")]
    Io {
        /// The journal file.
        path: PathBuf,
        /// The failed operation's error.
        error: io::Error,
    },
    /// Another process holds the journal's exclusive lock.
    #[error("operation journal `{0}` is in use by another process")]
    Locked(PathBuf),
    /// A record other than the last one does not verify, so the file was
    /// changed rather than torn by an interrupted append.
    #[error("operation journal `{path}` is corrupt at record {record}: {reason}")]
    Corrupt {
        /// The journal file.
        path: PathBuf,
        /// The 1-based number of the first bad record.
        record: usize,
        /// What is wrong with it.
        reason: RecordDefect,
    },
}

/// What is wrong with a journal record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordDefect {
    /// The record has no final newline.
    #[error("the record is cut short")]
    CutShort,
    /// The record is not UTF-8.
    #[error("the record is not UTF-8")]
    NotUtf8,
    /// The record has no hash before its JSON.
    #[error("the record has no hash")]
    NoHash,
    /// The record's hash is not the hash of its JSON.
    #[error("the record's hash does not match")]
    HashMismatch,
    /// The record's JSON is not a journal record.
    #[error("the record does not decode: {0}")]
    Decode(serde_json::Error),
    /// A second start of the operation (its key).
    #[error("operation `{0}` started twice")]
    StartedTwice(Token),
    /// A second outcome of the operation (its key).
    #[error("operation `{0}` finished twice")]
    FinishedTwice(Token),
    /// An outcome of an operation that has no start (its key).
    #[error("operation `{0}` finished but never started")]
    NeverStarted(Token),
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case", deny_unknown_fields)]
enum Record {
    Started {
        tool: Token,
        operation_key: Token,
        input: String,
    },
    Finished {
        operation_key: Token,
        status: OperationStatus,
    },
}

/// What the journal knows about one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The tool that ran it.
    pub tool: Token,
    /// The fingerprint of its input ([`input_fingerprint`]).
    pub input: String,
    /// The recorded outcome; `None` when it started and no outcome was
    /// recorded (the worker was stopped, the tool failed, the write tore).
    pub status: Option<OperationStatus>,
}

/// The fingerprint of an operation's input payload: BLAKE3 over a domain
/// string and the payload's canonical serialization, in hex.
pub fn input_fingerprint(payload: &Payload) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(INPUT_DOMAIN);
    // A payload always serializes (its JSON keys are strings).
    let bytes = serde_json::to_vec(payload).unwrap_or_default();
    hasher.update(&(bytes.len() as u64).to_be_bytes());
    hasher.update(&bytes);
    hasher.finalize().to_hex().to_string()
}

/// An open, locked operation journal.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    entries: BTreeMap<Token, Entry>,
}

impl Journal {
    /// Opens (creating it if needed) the journal in `dir`, locks it, reads
    /// every record and drops a torn last record.
    pub fn open(dir: &Path) -> Result<Self, JournalError> {
        let path = dir.join(JOURNAL_FILE);
        let io_err = |error| JournalError::Io {
            path: path.clone(),
            error,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_err)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(JournalError::Locked(path)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e)),
        }
        // The file's directory entry must survive a crash too.
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_err)?;
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        file.read_to_end(&mut bytes).map_err(io_err)?;
        let (entries, good) = parse(&bytes).map_err(|(record, reason)| JournalError::Corrupt {
            path: path.clone(),
            record,
            reason,
        })?;
        if good < bytes.len() {
            file.set_len(good as u64).map_err(io_err)?;
            file.sync_all().map_err(io_err)?;
        }
        Ok(Self {
            file,
            path,
            entries,
        })
    }

    /// Where the journal file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the journal knows about `operation_key`.
    pub fn entry(&self, operation_key: &Token) -> Option<&Entry> {
        self.entries.get(operation_key)
    }

    /// Durably records that `operation_key` of `tool` with input
    /// fingerprint `input` is about to run.
    pub(crate) fn start(
        &mut self,
        tool: &Token,
        operation_key: &Token,
        input: &str,
    ) -> io::Result<()> {
        self.append(&Record::Started {
            tool: tool.clone(),
            operation_key: operation_key.clone(),
            input: input.to_owned(),
        })?;
        self.entries.insert(
            operation_key.clone(),
            Entry {
                tool: tool.clone(),
                input: input.to_owned(),
                status: None,
            },
        );
        Ok(())
    }

    /// Durably records the outcome of a started operation.
    pub(crate) fn finish(
        &mut self,
        operation_key: &Token,
        status: &OperationStatus,
    ) -> io::Result<()> {
        self.append(&Record::Finished {
            operation_key: operation_key.clone(),
            status: status.clone(),
        })?;
        if let Some(entry) = self.entries.get_mut(operation_key) {
            entry.status = Some(status.clone());
        }
        Ok(())
    }

    fn append(&mut self, record: &Record) -> io::Result<()> {
        let json = serde_json::to_string(record).map_err(io::Error::other)?;
        let line = format!("{} {json}\n", blake3::hash(json.as_bytes()).to_hex());
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()
    }
}

/// Parses the journal: the entries and the length of the good prefix.
/// Errors name the 1-based record and why.
fn parse(bytes: &[u8]) -> Result<(BTreeMap<Token, Entry>, usize), (usize, RecordDefect)> {
    let mut entries: BTreeMap<Token, Entry> = BTreeMap::new();
    let mut good = 0;
    let mut rest = bytes;
    let mut n = 0;
    while !rest.is_empty() {
        n += 1;
        let (line, complete) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], true),
            None => (rest, false),
        };
        let consumed = line.len() + usize::from(complete);
        let last = consumed == rest.len();
        let record = if complete {
            decode(line)
        } else {
            Err(RecordDefect::CutShort)
        };
        let record = match record {
            Ok(r) => r,
            // A bad last record is a torn write.
            Err(_) if last => break,
            Err(reason) => return Err((n, reason)),
        };
        apply(&mut entries, record).map_err(|reason| (n, reason))?;
        good += consumed;
        rest = &rest[consumed..];
    }
    Ok((entries, good))
}

fn decode(line: &[u8]) -> Result<Record, RecordDefect> {
    let text = std::str::from_utf8(line).map_err(|_| RecordDefect::NotUtf8)?;
    let (hash, json) = text.split_once(' ').ok_or(RecordDefect::NoHash)?;
    if blake3::hash(json.as_bytes()).to_hex().as_str() != hash {
        return Err(RecordDefect::HashMismatch);
    }
    serde_json::from_str(json).map_err(RecordDefect::Decode)
}

fn apply(entries: &mut BTreeMap<Token, Entry>, record: Record) -> Result<(), RecordDefect> {
    match record {
        Record::Started {
            tool,
            operation_key,
            input,
        } => {
            if entries.contains_key(&operation_key) {
                return Err(RecordDefect::StartedTwice(operation_key));
            }
            entries.insert(
                operation_key,
                Entry {
                    tool,
                    input,
                    status: None,
                },
            );
        }
        Record::Finished {
            operation_key,
            status,
        } => match entries.get_mut(&operation_key) {
            Some(entry) if entry.status.is_none() => entry.status = Some(status),
            Some(_) => return Err(RecordDefect::FinishedTwice(operation_key)),
            None => return Err(RecordDefect::NeverStarted(operation_key)),
        },
    }
    Ok(())
}
