//! Writing a merged run past the page cache (`O_DIRECT`), for [`super::merge_into`], and
//! reading it back the same way in a walk over whole runs.
//!
//! A merge rewrites every record of its inputs. Written through the page cache, each byte
//! costs the kernel a copy into a cache page, and the pages pile up dirty faster than the disk
//! takes them, so every other writer of the process (the batch's own run, the manifest) is
//! made to wait for the writeback. At 10 million hosts the kernel's copy of the merges'
//! 29 GB was half the merge thread's time and a tenth of the whole ingest's CPU, and the store
//! thread spent about a third of its time waiting on the disk. Written direct, the device
//! takes the bytes from this writer's buffer, and the cache keeps what it held; a batch's
//! lookups read the merged run's records through the cache (at any offset, as before).
//!
//! Direct writes must start at an offset and from memory aligned to the device's block, for a
//! length that is a multiple of it. [`ALIGN`] (4096) is a multiple of every common logical
//! block size; the buffer is a `Vec` longer by `ALIGN` and used from its first aligned byte
//! (found with `align_offset`, so no `unsafe`). Only whole buffers are written until the end,
//! where the last bytes are written padded to `ALIGN` and the file is cut to its length.
//!
//! A merge, and an index build's walk over the whole store, also read the runs merges wrote
//! ([`open_for_reading`], [`Ahead`]) past the cache: they are not in it, and a read through
//! it would copy every byte once more and make the cache account for every page. With no
//! kernel read-ahead for direct reads, [`Ahead`] reads each run a chunk ahead of the walk on
//! a thread of its own, so the disk's time is spent while the walk decodes.
//!
//! A filesystem that refuses direct writes (the open or the first write fails with `EINVAL`)
//! is written through the page cache instead, by the same code, and one that refuses direct
//! reads is read through it: the bytes are the same either way, only the cost differs.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};

/// Alignment of the writes' offsets, lengths and buffer.
const ALIGN: usize = 4096;
/// Bytes given to each write (a multiple of [`ALIGN`]): large, as a direct write waits for the
/// device and a few large writes keep its throughput.
const WRITE_BYTES: usize = 4 << 20;

/// A new file written direct where its filesystem allows, as a [`Write`].
#[derive(Debug)]
pub(super) struct DirectWriter {
    path: PathBuf,
    file: File,
    /// Whether `file` was opened with `O_DIRECT`.
    direct: bool,
    buffer: Vec<u8>,
    /// Where the aligned area of `buffer` starts.
    area: usize,
    /// The bytes waiting to be written are `buffer[area..area + filled]`.
    filled: usize,
    /// The file offset of the buffer's first byte.
    offset: u64,
}

impl DirectWriter {
    /// Creates (or truncates) `path` for writing, direct if `direct` and its filesystem
    /// allows, else through the page cache.
    pub(super) fn create(path: &Path, direct: bool) -> io::Result<Self> {
        let (file, direct) = match open(path, direct) {
            Ok(file) => (file, direct),
            Err(e) if direct && refused(&e) => (open(path, false)?, false),
            Err(e) => return Err(e),
        };
        let buffer = vec![0; WRITE_BYTES + ALIGN];
        let area = buffer.as_ptr().align_offset(ALIGN);
        Ok(Self {
            path: path.to_owned(),
            file,
            direct,
            buffer,
            area,
            filled: 0,
            offset: 0,
        })
    }

    /// Whether the file is written direct (not through the page cache).
    #[cfg(test)]
    pub(super) fn is_direct(&self) -> bool {
        self.direct
    }

    /// Writes the buffer's first `len` bytes (a multiple of [`ALIGN`]) at `offset`; a
    /// filesystem that refuses the first direct write has the file reopened through the cache.
    fn write_out(&mut self, len: usize) -> io::Result<()> {
        let area = &self.buffer[self.area..self.area + len];
        match self.file.write_all_at(area, self.offset) {
            Err(e) if self.direct && self.offset == 0 && refused(&e) => {
                self.file = open(&self.path, false)?;
                self.direct = false;
                self.file.write_all_at(area, self.offset)
            }
            written => written,
        }
    }

    /// Writes what is left, cuts the file to the length written, and gives it back opened
    /// for reading through the page cache (which direct reads of arbitrary records could not
    /// be); not synced.
    pub(super) fn finish(mut self) -> io::Result<File> {
        let len = self.offset + self.filled as u64;
        if self.filled > 0 {
            let padded = self.filled.next_multiple_of(ALIGN);
            self.buffer[self.area + self.filled..self.area + padded].fill(0);
            self.write_out(padded)?;
        }
        self.file.set_len(len)?;
        if !self.direct {
            return Ok(self.file);
        }
        File::open(&self.path)
    }
}

impl Write for DirectWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = bytes.len().min(WRITE_BYTES - self.filled);
        let at = self.area + self.filled;
        self.buffer[at..at + n].copy_from_slice(&bytes[..n]);
        self.filled += n;
        if self.filled == WRITE_BYTES {
            self.write_out(WRITE_BYTES)?;
            self.offset += WRITE_BYTES as u64;
            self.filled = 0;
        }
        Ok(n)
    }

    /// Writes nothing: only whole buffers go out before [`DirectWriter::finish`].
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Opens `path` for direct reads; `None` when its filesystem refuses them.
pub(super) fn open_for_reading(path: &Path) -> io::Result<Option<File>> {
    match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(file) => Ok(Some(file)),
        Err(e) if refused(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads the `len` bytes at `at` of `file` (opened by [`open_for_reading`]) into `buffer`,
/// from the aligned offset at or before `at` to an aligned length past them (fewer at the end
/// of the file); where they are in `buffer` (start, and how many from there were read, at
/// least `len`).
fn read_at(file: &File, at: u64, len: usize, buffer: &mut Vec<u8>) -> io::Result<(usize, usize)> {
    let align = ALIGN as u64;
    let base = at / align * align;
    let skip = usize::try_from(at - base).expect("below ALIGN");
    let span = (skip + len).next_multiple_of(ALIGN);
    if buffer.len() < span + ALIGN {
        buffer.resize(span + ALIGN, 0);
    }
    let area = buffer.as_ptr().align_offset(ALIGN);
    let mut read = 0;
    while read < skip + len {
        // Each read starts aligned, so after a short one it starts again at or before the
        // byte that one ended at; one that brings nothing new stopped at the end of the file.
        let from = read / ALIGN * ALIGN;
        match file.read_at(&mut buffer[area + from..area + span], base + from as u64) {
            Ok(n) if from + n <= read => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => read = from + n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((area + skip, read - skip))
}

/// A file's bytes from an offset to an end, read direct in chunks by a thread of its own one
/// chunk ahead of the walk that takes them: while the walk decodes a chunk, the disk reads
/// the next (direct reads have no kernel read-ahead to do it). Each chunk ends at a multiple
/// of the chunk size, so every read after the first starts aligned.
#[derive(Debug)]
pub(super) struct Ahead {
    chunks: Receiver<io::Result<Chunk>>,
    /// Buffers of chunks taken, for the thread to read later chunks into.
    spare: Sender<Vec<u8>>,
}

/// Consecutive bytes of a file, read by [`Ahead`].
#[derive(Debug)]
pub(super) struct Chunk {
    /// The file offset of the chunk's first byte.
    pub(super) at: u64,
    buffer: Vec<u8>,
    /// The chunk's bytes are `buffer[from..from + len]`.
    from: usize,
    len: usize,
}

impl Chunk {
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buffer[self.from..self.from + self.len]
    }

    /// The file offset just past the chunk.
    pub(super) fn end(&self) -> u64 {
        self.at + self.len as u64
    }
}

impl Ahead {
    /// Starts reading `file` (opened by [`open_for_reading`]) from `at` to `end`, in chunks
    /// ending at multiples of `chunk` bytes (a multiple of [`ALIGN`]). The thread ends at
    /// `end`, at its first error (given as the next chunk), or when this is dropped.
    pub(super) fn start(file: &File, at: u64, end: u64, chunk: usize) -> io::Result<Self> {
        assert!(
            chunk > 0 && chunk.is_multiple_of(ALIGN),
            "chunks of whole blocks"
        );
        let file = file.try_clone()?;
        // No room in the channel: the thread reads one chunk and waits for it to be taken.
        let (send, chunks) = mpsc::sync_channel(0);
        let (spare, spares) = mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("store-read-ahead".into())
            .spawn(move || {
                let mut at = at;
                while at < end {
                    let next = (at / chunk as u64 + 1) * chunk as u64;
                    let len = usize::try_from(next.min(end) - at).expect("at most a chunk");
                    let mut buffer = spares.try_recv().unwrap_or_default();
                    let read = read_at(&file, at, len, &mut buffer).map(|(from, _)| Chunk {
                        at,
                        buffer,
                        from,
                        len,
                    });
                    let failed = read.is_err();
                    if send.send(read).is_err() || failed {
                        return;
                    }
                    at = next;
                }
            })?;
        Ok(Self { chunks, spare })
    }

    /// The next chunk; `UnexpectedEof` past the end.
    pub(super) fn next(&self) -> io::Result<Chunk> {
        self.chunks
            .recv()
            .unwrap_or_else(|_| Err(io::ErrorKind::UnexpectedEof.into()))
    }

    /// Gives a chunk's buffer back to be read into again.
    pub(super) fn recycle(&self, chunk: Chunk) {
        // The thread may have ended (at the end of the file); the buffer is then dropped.
        let _ = self.spare.send(chunk.buffer);
    }
}

fn open(path: &Path, direct: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path)
}

/// Whether `e` says the filesystem does not read or write direct.
pub(super) fn refused(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that differ at every position of a block, so a block written twice or skipped
    /// shows.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 4093) as u8)
            .collect()
    }

    #[test]
    fn writes_every_byte_once_in_order_whatever_the_length() {
        // Beside the test binary: the target directory is on a disk filesystem.
        let exe = std::env::current_exe().expect("the test binary");
        let dir = exe.with_file_name(format!("direct-writer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        for len in [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            WRITE_BYTES - 1,
            WRITE_BYTES,
            WRITE_BYTES + 1,
            2 * WRITE_BYTES + 12_345,
        ] {
            let bytes = pattern(len);
            let path = dir.join(format!("len{len}"));
            // A file there before is truncated, not overwritten in part.
            std::fs::write(&path, vec![7; 3 * WRITE_BYTES]).expect("an old file");
            let mut writer = DirectWriter::create(&path, true).expect("create");
            assert!(writer.is_direct(), "a disk filesystem writes direct");
            // Small, odd writes, then large ones, so writes cross the buffer's end at every
            // phase.
            let head = len.min(10_007);
            for piece in bytes[..head].chunks(7) {
                writer.write_all(piece).expect("write");
            }
            for piece in bytes[head..].chunks(3_000_017) {
                writer.write_all(piece).expect("write");
            }
            let file = writer.finish().expect("finish");
            assert_eq!(file.metadata().expect("metadata").len(), len as u64);
            // Read back through the handle given back, at an offset no direct read allows.
            let mut got = vec![0; len.saturating_sub(3)];
            file.read_exact_at(&mut got, 3.min(len as u64))
                .expect("read back");
            assert!(
                got == bytes[3.min(len)..],
                "{len} bytes: other bytes read back"
            );
            assert!(std::fs::read(&path).expect("read") == bytes, "{len} bytes");
        }
        std::fs::remove_dir_all(&dir).expect("remove the scratch directory");
    }

    #[test]
    fn a_read_at_any_offset_gives_the_bytes_there() {
        let exe = std::env::current_exe().expect("the test binary");
        let path = exe.with_file_name(format!("direct-reader-{}", std::process::id()));
        let len = 3 * ALIGN + 1_234;
        let bytes = pattern(len);
        std::fs::write(&path, &bytes).expect("a scratch file");
        let file = open_for_reading(&path)
            .expect("open")
            .expect("a disk filesystem reads direct");
        let mut buffer = Vec::new();
        for (at, want) in [
            (0, 1),
            (0, len),
            (1, ALIGN),
            (ALIGN - 1, 2),
            (ALIGN, ALIGN),
            (2 * ALIGN + 17, ALIGN + 100),
            (len - 1, 1),
        ] {
            let (from, read) = read_at(&file, at as u64, want, &mut buffer).expect("read");
            assert!(read >= want, "at {at}: {read} bytes read of {want}");
            assert!(from + read <= buffer.len());
            assert!(
                buffer[from..from + want] == bytes[at..at + want],
                "at {at}: other bytes"
            );
            // Whatever else was read is the file's too.
            assert!(buffer[from..from + read] == bytes[at..at + read], "at {at}");
        }
        let past = read_at(&file, len as u64 - 1, 2, &mut buffer).expect_err("past the end");
        assert_eq!(past.kind(), io::ErrorKind::UnexpectedEof);
        std::fs::remove_file(&path).expect("remove the scratch file");
    }
}
