//! Reading a large regular file past the page cache (`O_DIRECT`), for [`super::open_input`].
//!
//! `ingest` reads its input once, start to end. Read through the page cache, every byte costs
//! the kernel a copy into the process and the pages it fills are evicted again soon after
//! (an input larger than memory cannot stay): at 10 million hosts, reading the 39.5 GB input
//! alone took 18 s of system time (`dd bs=1M`), against 1.9 s read direct (`iflag=direct`),
//! and the pages it filled pushed the store's own runs out of the cache while merges still
//! read them. Read direct, the device writes into this reader's buffer and the cache keeps
//! what it held.
//!
//! Direct reads must start at an offset and into memory aligned to the device's block, for a
//! length that is a multiple of it. [`ALIGN`] (4096) is a multiple of every common logical
//! block size; the buffer is a `Vec` longer by `ALIGN` and used from its first aligned byte
//! (found with `align_offset`, so no `unsafe`). A read that came back short before the end is
//! not trusted to leave the offset aligned: each read starts at the aligned offset at or
//! before the next byte wanted and drops the bytes before it.
//!
//! A direct read waits for the device, and a thread that waits cuts no lines: the reads run
//! [`AHEAD`] blocks ahead on a thread of their own (`ingest-read`), so the device fills the
//! next block while the lines of this one are cut and parsed. Blocks go round between the two
//! threads over two channels (filled ones one way, emptied ones back), so memory is
//! `AHEAD + 1` blocks whatever the file's length. A read error is handed over in the block's
//! place and ends the reading; the reading thread ending any other way before the end of the
//! file is an error too, never taken for the end.
//!
//! A filesystem that refuses direct reads (the open or the first read fails with `EINVAL`,
//! as tmpfs did before Linux 6.6) is read through the page cache instead: the bytes are the
//! same either way, only the cost differs. The first read is made before the thread starts,
//! so a refusal is seen by [`DirectReader::open`].

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Alignment of the reads' offsets, lengths and buffer.
pub(super) const ALIGN: usize = 4096;

/// Bytes asked of each read (a multiple of [`ALIGN`]): large, as a direct read waits for the
/// device and a few large reads keep its throughput.
const READ_BYTES: usize = 4 << 20;

/// Blocks read ahead of the one being consumed: two, so a read that the device is slow to
/// answer (while a merge writes) is covered by the block before it.
const AHEAD: usize = 2;

/// One read's bytes: the unconsumed ones are `buffer[pos..end]`.
#[derive(Debug)]
struct Block {
    buffer: Vec<u8>,
    /// Where the aligned area of `buffer` starts.
    area: usize,
    pos: usize,
    end: usize,
}

impl Block {
    /// An empty block with an aligned area of [`READ_BYTES`].
    fn new() -> Self {
        let buffer = vec![0; READ_BYTES + ALIGN];
        let area = buffer.as_ptr().align_offset(ALIGN);
        Self {
            buffer,
            area,
            pos: area,
            end: area,
        }
    }

    fn unconsumed(&self) -> &[u8] {
        &self.buffer[self.pos..self.end]
    }
}

/// The file and the offset of the next byte to read: what reads the blocks, in order.
#[derive(Debug)]
struct Filler {
    file: File,
    offset: u64,
}

impl Filler {
    /// Reads the bytes from `offset` on into `block` (none at the end of the file).
    fn fill(&mut self, block: &mut Block) -> io::Result<()> {
        let align = ALIGN as u64;
        let base = self.offset / align * align;
        let skip = usize::try_from(self.offset - base).expect("below ALIGN");
        let area = &mut block.buffer[block.area..block.area + READ_BYTES];
        let read = loop {
            match self.file.read_at(area, base) {
                Ok(read) => break read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let fresh = read.saturating_sub(skip);
        block.pos = block.area + skip;
        block.end = block.pos + fresh;
        self.offset += fresh as u64;
        Ok(())
    }

    /// The reading thread: fills each emptied block it is given and hands it over, until the
    /// end of the file (an empty block), an error, or the reader is gone.
    fn run(mut self, emptied: &Receiver<Block>, filled: &SyncSender<io::Result<Block>>) {
        while let Ok(mut block) = emptied.recv() {
            let read = self.fill(&mut block).map(|()| block);
            let last = !matches!(&read, Ok(b) if b.pos < b.end);
            if filled.send(read).is_err() || last {
                return;
            }
        }
    }
}

/// A regular file read direct, as a [`BufRead`]; counts the bytes it hands out in `consumed`.
#[derive(Debug)]
pub(super) struct DirectReader {
    /// The block being consumed.
    block: Block,
    /// Where it came from: the blocks the reading thread filled, in order.
    filled: Receiver<io::Result<Block>>,
    /// Emptied blocks, back to the reading thread.
    emptied: SyncSender<Block>,
    /// The end of the file was reached (an empty block came).
    ended: bool,
    consumed: Arc<AtomicU64>,
}

impl DirectReader {
    /// Opens `path` for direct reads, reads its first block and starts the reading thread
    /// on the rest; `None` when its filesystem refuses direct reads.
    pub(super) fn open(path: &Path, consumed: Arc<AtomicU64>) -> io::Result<Option<Self>> {
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if refused(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut filler = Filler { file, offset: 0 };
        let mut block = Block::new();
        match filler.fill(&mut block) {
            Ok(()) => {}
            Err(e) if refused(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
        let ended = block.pos == block.end;
        consumed.fetch_add(block.unconsumed().len() as u64, Ordering::Relaxed);
        let (emptied, to_fill) = sync_channel(AHEAD + 1);
        let (done, filled) = sync_channel(AHEAD);
        if !ended {
            for _ in 0..AHEAD {
                emptied
                    .send(Block::new())
                    .expect("the channel holds every block");
            }
            std::thread::Builder::new()
                .name("ingest-read".into())
                .spawn(move || filler.run(&to_fill, &done))?;
        }
        Ok(Some(Self {
            block,
            filled,
            emptied,
            ended,
            consumed,
        }))
    }

    /// Gives the consumed block back and takes the next one the reading thread filled.
    fn next_block(&mut self) -> io::Result<()> {
        let next = match self.filled.recv() {
            Ok(next) => next?,
            Err(_) => {
                return Err(io::Error::other(
                    "the thread reading the file ended before its end",
                ));
            }
        };
        let emptied = std::mem::replace(&mut self.block, next);
        self.ended = self.block.pos == self.block.end;
        self.consumed
            .fetch_add(self.block.unconsumed().len() as u64, Ordering::Relaxed);
        // The reading thread is gone once it handed over the end of the file or an error;
        // the block is then simply dropped.
        let _ = self.emptied.send(emptied);
        Ok(())
    }
}

/// Whether `e` says the filesystem does not read direct.
fn refused(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EINVAL)
}

impl Read for DirectReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for DirectReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.block.pos == self.block.end && !self.ended {
            self.next_block()?;
        }
        Ok(self.block.unconsumed())
    }

    fn consume(&mut self, amount: usize) {
        self.block.pos = (self.block.pos + amount).min(self.block.end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file beside the test binary (in the target directory, on a disk filesystem, which
    /// reads direct), removed when dropped.
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn scratch(name: &str, bytes: &[u8]) -> Scratch {
        let exe = std::env::current_exe().expect("the test binary");
        let path = exe.with_file_name(format!("direct-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).expect("write the scratch file");
        Scratch(path)
    }

    /// Bytes that differ at every position of a block, so a block read twice or skipped shows.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 4093) as u8)
            .collect()
    }

    #[test]
    fn reads_every_byte_once_in_order_whatever_the_length() {
        for len in [
            0,
            1,
            ALIGN - 1,
            ALIGN,
            READ_BYTES - 1,
            READ_BYTES,
            READ_BYTES + 1,
            2 * READ_BYTES + 12_345,
        ] {
            let bytes = pattern(len);
            let file = scratch(&format!("len{len}"), &bytes);
            let consumed = Arc::new(AtomicU64::new(0));
            let mut reader = DirectReader::open(&file.0, Arc::clone(&consumed))
                .expect("open")
                .expect("a disk filesystem reads direct");
            // Small, odd reads through `Read`, then the rest through `BufRead`, so reads
            // cross the buffer's end at every phase.
            let head = len.min(10_007);
            let mut got = vec![0; head];
            let mut filled = 0;
            while filled < head {
                let piece = filled..(filled + 7).min(head);
                filled += reader.read(&mut got[piece]).expect("read");
            }
            loop {
                let available = reader.fill_buf().expect("fill");
                if available.is_empty() {
                    break;
                }
                let n = available.len().min(3_000_017);
                got.extend_from_slice(&available[..n]);
                reader.consume(n);
            }
            assert!(got == bytes, "{len} bytes: read {} bytes", got.len());
            assert_eq!(consumed.load(Ordering::Relaxed), len as u64, "{len} bytes");
            assert_eq!(reader.read(&mut [0; 8]).expect("at the end"), 0);
        }
    }

    #[test]
    fn a_read_that_ends_off_the_alignment_resumes_at_the_right_byte() {
        let bytes = pattern(3 * ALIGN);
        let file = scratch("resume", &bytes);
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&file.0)
            .expect("open");
        // As after a read that came back short mid-block: the next byte wanted is 100 bytes
        // into the second block.
        let mut filler = Filler {
            file,
            offset: ALIGN as u64 + 100,
        };
        let mut block = Block::new();
        filler
            .fill(&mut block)
            .expect("a disk filesystem reads direct");
        assert!(
            block.unconsumed() == &bytes[ALIGN + 100..],
            "read {} bytes",
            block.unconsumed().len()
        );
        filler.fill(&mut block).expect("read at the end");
        assert!(block.unconsumed().is_empty(), "nothing after the end");
    }

    #[test]
    fn a_missing_file_is_an_error_not_a_refusal() {
        let missing = std::env::temp_dir().join("periscope-direct-no-such-file");
        let e = DirectReader::open(&missing, Arc::new(AtomicU64::new(0))).expect_err("missing");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
