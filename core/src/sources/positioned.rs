//! A file read by position: `pread` on Unix, `seek_read` on Windows, so one open file
//! serves any number of threads at once without a seek lock; elsewhere a seek and a read
//! under a lock. The one home of positioned reads for the file-backed sources (OpenEXR,
//! Ptex).

use std::fs::File;
use std::io;

/// An open file read by position from any number of threads.
#[derive(Debug)]
pub(crate) struct PositionedFile {
    file: File,
    /// Serialises seek + read where the platform has no positioned read.
    #[cfg(not(any(unix, windows)))]
    seek: parking_lot::Mutex<()>,
}

impl PositionedFile {
    /// Wrap an open file.
    pub(crate) fn new(file: File) -> PositionedFile {
        PositionedFile {
            file,
            #[cfg(not(any(unix, windows)))]
            seek: parking_lot::Mutex::new(()),
        }
    }

    /// The file's metadata now (one `fstat`).
    pub(crate) fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// Read up to `buf.len()` bytes at `offset` (fewer only at the end of the file, or
    /// where the platform's positioned read returns early: callers loop).
    pub(crate) fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_at(&self.file, buf, offset)
        }
        #[cfg(windows)]
        {
            std::os::windows::fs::FileExt::seek_read(&self.file, buf, offset)
        }
        #[cfg(not(any(unix, windows)))]
        {
            use std::io::{Read, Seek, SeekFrom};
            let _guard = self.seek.lock();
            let mut f = &self.file;
            f.seek(SeekFrom::Start(offset))?;
            f.read(buf)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_at_any_offset_from_many_threads_and_short_at_the_end() {
        let path = std::env::temp_dir().join(format!("dtex-positioned-{}", std::process::id()));
        let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        File::create(&path).unwrap().write_all(&bytes).unwrap();
        let file = PositionedFile::new(File::open(&path).unwrap());
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (file, bytes) = (&file, &bytes);
                s.spawn(move || {
                    for i in 0..64u64 {
                        let offset = (t * 997 + i * 61) % 4000;
                        let mut buf = [0u8; 64];
                        let n = file.read_at(&mut buf, offset).unwrap();
                        let want = &bytes[offset as usize..(offset as usize + 64).min(4096)];
                        assert_eq!(&buf[..n], want);
                    }
                });
            }
        });
        let mut buf = [0u8; 64];
        assert_eq!(file.read_at(&mut buf, 4090).unwrap(), 6);
        assert_eq!(file.read_at(&mut buf, 5000).unwrap(), 0);
        assert_eq!(file.metadata().unwrap().len(), 4096);
        std::fs::remove_file(&path).unwrap();
    }
}
