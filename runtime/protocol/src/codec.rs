//! The bounded JSON-line codec.
//!
//! One JSON object per line, at most [`MAX_LINE_BYTES`] bytes excluding the
//! newline. The reader enforces the bound while it reads: it never holds
//! more than `MAX_LINE_BYTES + 1` bytes of one line. Any framing, decode,
//! validation or I/O error poisons the reader or writer, and every later
//! call fails with [`CodecError::Poisoned`]. A clean end of input at a line
//! boundary is not an error: the reader returns `Ok(None)` from then on.

use std::io::{self, BufRead, Write};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The maximum length of one line, excluding the newline.
pub const MAX_LINE_BYTES: usize = 1_048_576;

/// Why a line could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// An earlier error poisoned this end; nothing more is read or written.
    #[error("the channel is poisoned by an earlier error")]
    Poisoned,
    /// A line over [`MAX_LINE_BYTES`].
    #[error("line exceeds {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    /// The input ended without a final newline.
    #[error("input ended in the middle of a line")]
    TruncatedLine,
    /// A line that is valid JSON but not an object.
    #[error("line is not a JSON object")]
    NotAnObject,
    /// A line that is not the expected JSON (syntax, shape, duplicate key).
    #[error("line does not decode: {0}")]
    Decode(serde_json::Error),
    /// A value that could not be serialized.
    #[error("failed to encode a line: {0}")]
    Encode(serde_json::Error),
    /// Reading or writing the stream failed.
    #[error("channel I/O failed: {0}")]
    Io(io::Error),
}

/// Reads one bounded JSON object per line.
#[derive(Debug)]
pub struct JsonLineReader<R> {
    inner: R,
    line: Vec<u8>,
    poisoned: bool,
    eof: bool,
}

impl<R: BufRead> JsonLineReader<R> {
    /// A reader of lines from `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            line: Vec::new(),
            poisoned: false,
            eof: false,
        }
    }

    /// Whether an earlier error poisoned the reader.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Marks the reader unusable (for errors found above the codec).
    pub fn poison(&mut self) {
        self.poisoned = true;
    }

    /// Reads and decodes the next line; `Ok(None)` at a clean end of input.
    pub fn read<T: DeserializeOwned>(&mut self) -> Result<Option<T>, CodecError> {
        if self.poisoned {
            return Err(CodecError::Poisoned);
        }
        let result = self.read_inner();
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn read_inner<T: DeserializeOwned>(&mut self) -> Result<Option<T>, CodecError> {
        if !self.read_line()? {
            return Ok(None);
        }
        let first = self
            .line
            .iter()
            .copied()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\r'));
        if first != Some(b'{') {
            return Err(CodecError::NotAnObject);
        }
        serde_json::from_slice(&self.line)
            .map(Some)
            .map_err(CodecError::Decode)
    }

    /// Fills `self.line` with the next line (without its newline). Returns
    /// `false` at a clean end of input.
    fn read_line(&mut self) -> Result<bool, CodecError> {
        self.line.clear();
        if self.eof {
            return Ok(false);
        }
        loop {
            let available = match self.inner.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(CodecError::Io(e)),
            };
            if available.is_empty() {
                if self.line.is_empty() {
                    self.eof = true;
                    return Ok(false);
                }
                return Err(CodecError::TruncatedLine);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(available.len());
            if self.line.len() + take > MAX_LINE_BYTES {
                return Err(CodecError::LineTooLong);
            }
            self.line.extend_from_slice(&available[..take]);
            match newline {
                Some(_) => {
                    self.inner.consume(take + 1);
                    return Ok(true);
                }
                None => self.inner.consume(take),
            }
        }
    }

    /// The underlying reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }
}

/// Writes one JSON object per line and flushes after each.
#[derive(Debug)]
pub struct JsonLineWriter<W> {
    inner: W,
    poisoned: bool,
}

impl<W: Write> JsonLineWriter<W> {
    /// A writer of lines to `inner`.
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            poisoned: false,
        }
    }

    /// Whether an earlier error poisoned the writer.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Marks the writer unusable (for errors found above the codec).
    pub fn poison(&mut self) {
        self.poisoned = true;
    }

    /// Encodes `value` as one line and flushes it.
    pub fn write<T: Serialize>(&mut self, value: &T) -> Result<(), CodecError> {
        if self.poisoned {
            return Err(CodecError::Poisoned);
        }
        let result = self.write_inner(value);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn write_inner<T: Serialize>(&mut self, value: &T) -> Result<(), CodecError> {
        let mut line = crate::canonical::to_vec(value).map_err(CodecError::Encode)?;
        if line.first() != Some(&b'{') {
            return Err(CodecError::NotAnObject);
        }
        if line.len() > MAX_LINE_BYTES {
            return Err(CodecError::LineTooLong);
        }
        line.push(b'\n');
        self.inner.write_all(&line).map_err(CodecError::Io)?;
        self.inner.flush().map_err(CodecError::Io)
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Gives the underlying writer back (for example to close a pipe).
    pub fn into_inner(self) -> W {
        self.inner
    }
}
