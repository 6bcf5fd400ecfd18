//! Opening a texture file: one rule for every source and tool. A path that names anything
//! but a regular file (symbolic links followed) — a FIFO, a socket, a device, a directory —
//! is refused before it is opened, with an error naming what it is: opening a FIFO for
//! reading waits for a writer that may never come (a hang), and a device can stream
//! without end.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// Open `path` for reading if it is a regular file; else an
/// [`InvalidInput`](io::ErrorKind::InvalidInput) error saying what it is.
pub fn open_file(path: &Path) -> io::Result<File> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file: {}", kind(&meta)),
        ));
    }
    File::open(path)
}

/// What a path that is not a regular file names.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe), which would block until something writes to it";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    "neither a file nor a directory"
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::sources::ImageSource;
    use std::path::PathBuf;

    /// A FIFO at a fresh path in the temporary directory, named `name` (made by `mkfifo`,
    /// as the integration tests make theirs).
    fn fifo(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("demandtex-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success(), "mkfifo {}", path.display());
        path
    }

    /// `source`'s open, its error as text.
    fn open_source(source: &dyn ImageSource) -> Result<(), String> {
        source.open().map(drop).map_err(|e| e.to_string())
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_and_files_opened() {
        let f = fifo("refused.exr");
        let e = open_file(&f).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = open_file(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let e = open_file(&std::env::temp_dir()).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let e = open_file(Path::new("/no/such/texture.exr")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let file = f.with_file_name("regular.exr");
        std::fs::write(&file, b"bytes").unwrap();
        assert!(open_file(&file).is_ok());
    }

    /// Every way a texture file is opened — by format detection, by each source's open
    /// (EXR, TIFF, DDS, PNG), by the Ptex reader — refuses a FIFO with
    /// an error naming it, and none waits for a writer (each runs on a thread given 20 s).
    #[test]
    fn no_texture_route_waits_on_a_fifo() {
        use crate::sources::{
            file_source, ptex::PtexFile, DdsSource, DecodedImageSource, TiffSource,
        };
        use std::sync::mpsc;
        type Route = fn(&Path) -> Result<(), String>;
        let routes: [(&str, Route); 6] = [
            ("detect.exr", |p| {
                crate::sources::detect::detect_format(p)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }),
            ("source.exr", |p| open_source(&*file_source(p))),
            ("source.tx", |p| open_source(&TiffSource::new(p))),
            ("source.dds", |p| open_source(&DdsSource::new(p))),
            ("source.png", |p| open_source(&DecodedImageSource::new(p))),
            ("open.ptx", |p| {
                PtexFile::open(p).map(drop).map_err(|e| e.to_string())
            }),
        ];
        for (name, route) in routes {
            let path = fifo(name);
            let (send, receive) = mpsc::channel();
            let p = path.clone();
            std::thread::spawn(move || send.send(route(&p)));
            let result = receive
                .recv_timeout(std::time::Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("{name}: still waiting on the FIFO after 20 s"));
            let e = result.expect_err(name);
            assert!(e.contains("FIFO"), "{name}: {e}");
        }
    }
}
