//! Bubblewrap's options: which `--option`s a Bubblewrap build parses, read
//! from the very file that will be launched (bind step 5).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use splashpol::plan::LaunchPlan;

use crate::error::BindError;
use crate::sys;

/// The options (`--name`) the plan's argument list passes to Bubblewrap,
/// as the one argument builder reports them.
pub(crate) fn plan_options(plan: &LaunchPlan) -> BTreeSet<String> {
    splashpol::emit::options_used(plan)
        .into_iter()
        .map(|o| o.option.to_owned())
        .collect()
}

/// Whether the Bubblewrap build at `program` (a path, or `/proc/self/fd/N`
/// of the pinned descriptor, which reopens that file) understands every
/// option in `needed`; the first one it lacks is the error.
///
/// An ELF build is read, not run: Bubblewrap's parser compares each argument
/// with a NUL-terminated `--option` literal, so those literals are the
/// options it parses (on bubblewrap 0.8.0 exactly the set `--help` lists, a
/// test checks it). Its read-only data sections are read first (about a
/// fifth of the file); only when an option is not found there is the whole
/// image read, so the answer is the whole image's. Any other program (a
/// wrapper script) is asked with `--help`. A false positive cannot weaken a
/// launch: Bubblewrap refuses an option it does not parse, and the launch
/// fails.
pub(crate) fn check_supported_options(
    program: &Path,
    shown: &str,
    needed: &BTreeSet<String>,
) -> Result<(), BindError> {
    let query = |source| BindError::BubblewrapQuery {
        path: PathBuf::from(shown),
        source,
    };
    let lacking = |supported: &BTreeSet<String>| needed.difference(supported).next().cloned();
    let mut file = File::open(program).map_err(query)?;
    let mut magic = [0u8; 4];
    let elf = match file.read_exact(&mut magic) {
        Ok(()) => &magic == b"\x7fELF",
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => false,
        Err(e) => return Err(query(e)),
    };
    let missing = if !elf {
        lacking(&options_from_help(program, shown)?)
    } else if elf_rodata_literals(&file)
        .map_err(query)?
        .is_some_and(|found| lacking(&found).is_none())
    {
        None
    } else {
        file.rewind().map_err(query)?;
        lacking(&option_literals_read(&file).map_err(query)?)
    };
    match missing {
        Some(option) => Err(BindError::UnsupportedOption {
            path: PathBuf::from(shown),
            option,
        }),
        None => Ok(()),
    }
}

/// The option literals of the read-only data sections (`.rodata` and
/// `.rodata.*`) of a 64-bit little-endian ELF file, found through its
/// section headers. `None` when the file has no such section or its headers
/// are not what this reader expects (then the caller reads the whole image).
fn elf_rodata_literals(file: &File) -> io::Result<Option<BTreeSet<String>>> {
    let size = file.metadata()?.len();
    let Some(sections) = elf_rodata_sections(file, size)? else {
        return Ok(None);
    };
    let mut found = BTreeSet::new();
    let mut bytes = Vec::new();
    for (offset, len) in sections {
        bytes.resize(len, 0);
        std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, offset)?;
        scan_strings(&bytes, &mut found);
    }
    Ok(Some(found))
}

/// The most read-only data [`elf_rodata_literals`] reads into memory at once
/// (bubblewrap 0.8.0 has 14 KB); an image with more is scanned whole, a
/// chunk at a time.
const RODATA_READ_MAX: usize = 1 << 20;

/// The file ranges `(offset, length)` of the `SHT_PROGBITS` sections named
/// `.rodata` or `.rodata.*`; `None` for anything but a consistent 64-bit
/// little-endian ELF file of `size` bytes that has at least one, or when
/// they hold more than [`RODATA_READ_MAX`] bytes together.
fn elf_rodata_sections(file: &File, size: u64) -> io::Result<Option<Vec<(u64, usize)>>> {
    use std::os::unix::fs::FileExt;
    const SHT_PROGBITS: u32 = 1;
    const ENTRY: usize = 64;
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at =
        |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    // A range inside the file, as (offset, length).
    let within = |offset: u64, len: u64| {
        (offset.checked_add(len)? <= size)
            .then(|| usize::try_from(len).ok())
            .flatten()
            .map(|len| (offset, len))
    };

    let mut header = [0u8; 64];
    if size < 64 {
        return Ok(None);
    }
    file.read_exact_at(&mut header, 0)?;
    // ELFCLASS64, ELFDATA2LSB, 64-byte section header entries.
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return Ok(None);
    }
    let (shoff, shentsize) = (u64_at(&header, 0x28), usize::from(u16_at(&header, 0x3a)));
    let (shnum, shstrndx) = (
        usize::from(u16_at(&header, 0x3c)),
        usize::from(u16_at(&header, 0x3e)),
    );
    if shentsize != ENTRY || shnum == 0 || shstrndx >= shnum {
        return Ok(None);
    }
    let Some((table_at, table_len)) = within(shoff, (shnum * ENTRY) as u64) else {
        return Ok(None);
    };
    let mut table = vec![0u8; table_len];
    file.read_exact_at(&mut table, table_at)?;
    let entry = |i: usize| &table[i * ENTRY..(i + 1) * ENTRY];

    let names = entry(shstrndx);
    let Some((names_at, names_len)) =
        within(u64_at(names, 0x18), u64_at(names, 0x20)).filter(|&(_, len)| len <= RODATA_READ_MAX)
    else {
        return Ok(None);
    };
    let mut strtab = vec![0u8; names_len];
    file.read_exact_at(&mut strtab, names_at)?;

    let mut ranges = Vec::new();
    for i in 0..shnum {
        let section = entry(i);
        let name_at = u32_at(section, 0) as usize;
        let name = strtab
            .get(name_at..)
            .and_then(|rest| rest.split(|b| *b == 0).next())
            .unwrap_or_default();
        if u32_at(section, 4) != SHT_PROGBITS
            || !(name == b".rodata" || name.starts_with(b".rodata."))
        {
            continue;
        }
        match within(u64_at(section, 0x18), u64_at(section, 0x20)) {
            Some(range) => ranges.push(range),
            None => return Ok(None),
        }
    }
    let total = ranges.iter().map(|&(_, len)| len).sum::<usize>();
    Ok((!ranges.is_empty() && total <= RODATA_READ_MAX).then_some(ranges))
}

/// How much of a program image [`option_literals_read`] reads at a time.
const SCAN_CHUNK: usize = 16 * 1024;

/// [`option_literals`] of everything `image` yields, read a chunk at a
/// time: only the string still open at the end of a chunk is carried over,
/// so for a program image (short strings between NULs) the memory touched
/// stays about two chunks whatever its size; a fresh buffer for the whole
/// image costs a page fault per 4 KiB. (Input without NULs is held whole
/// until its end, as reading it at once would.)
pub fn option_literals_read(mut image: impl Read) -> io::Result<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    // `window` = the open string carried over, then the bytes just read.
    let mut window: Vec<u8> = Vec::with_capacity(2 * SCAN_CHUNK);
    loop {
        let kept = window.len();
        window.resize(kept + SCAN_CHUNK, 0);
        let n = loop {
            match image.read(&mut window[kept..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        window.truncate(kept + n);
        if n == 0 {
            // The end of the image ends the last string.
            scan_strings(&window, &mut found);
            return Ok(found);
        }
        // Every string up to the last NUL read is complete; without a NUL
        // in these bytes the open string just grows.
        if let Some(last_nul) = finder(0).rfind(&window[kept..]) {
            let complete = kept + last_nul + 1;
            scan_strings(&window[..complete], &mut found);
            window.drain(..complete);
        }
    }
}

/// A word-at-a-time search for `byte` that needs no run-time CPU feature
/// detection (which costs a trip to the hypervisor per `cpuid` instruction
/// on a virtual machine, more than this whole scan).
fn finder(byte: u8) -> memchr::arch::all::memchr::One {
    memchr::arch::all::memchr::One::new(byte)
}

/// Every NUL-terminated string of `image` that ends in `--` followed by an
/// option name (lowercase letters, digits and `-`), as that `--name`. The
/// name starts after the last `--` of its string.
///
/// Bubblewrap's image is mostly binary (NULs are dense, `--` is rare), so
/// the scan jumps to each string that holds a `--` (a word-at-a-time search
/// for `-`), takes the last `--` before the string's NUL and goes on after
/// that NUL: every byte is looked at a bounded number of times.
pub fn option_literals(image: &[u8]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    scan_strings(image, &mut found);
    found
}

/// [`option_literals`] into `found`. The end of `image` ends a string, so
/// `image` split after any NUL gives the same union.
fn scan_strings(image: &[u8], found: &mut BTreeSet<String>) {
    let (dash_finder, nul_finder) = (finder(b'-'), finder(0));
    let mut from = 0;
    while from < image.len() {
        let Some(dash) = dash_finder.find(&image[from..]).map(|i| from + i) else {
            return;
        };
        if image.get(dash + 1) != Some(&b'-') {
            from = dash + 1;
            continue;
        }
        let end = nul_finder
            .find(&image[dash..])
            .map_or(image.len(), |n| dash + n);
        let string = &image[dash..end];
        // `string` starts with `--`, so there is a last one.
        let last = string.windows(2).rposition(|w| w == b"--").unwrap_or(0);
        let name = &string[last + 2..];
        if !name.is_empty() && name.iter().copied().all(option_name_byte) {
            found.insert(String::from_utf8_lossy(&string[last..]).into_owned());
        }
        from = end + 1;
    }
}

/// A byte an option name may hold.
fn option_name_byte(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'
}

/// The options a program lists in `--help`.
fn options_from_help(program: &Path, shown: &str) -> Result<BTreeSet<String>, BindError> {
    let mut command = Command::new(program);
    command
        .arg("--help")
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    sys::install_child_descriptor_hook(&mut command, Vec::new());
    let output = command
        .output()
        .map_err(|source| BindError::BubblewrapQuery {
            path: PathBuf::from(shown),
            source,
        })?;
    if !output.status.success() {
        return Err(BindError::BubblewrapHelp {
            path: PathBuf::from(shown),
            status: crate::status::WorkerStatus::from_exit(output.status),
        });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    Ok(text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("--"))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// The plain definition: split at every NUL, take the last `--` of each
    /// string, keep it when a non-empty option name follows.
    fn reference(image: &[u8]) -> BTreeSet<String> {
        image
            .split(|b| *b == 0)
            .filter_map(|s| {
                let start = s.windows(2).rposition(|w| w == b"--")?;
                let name = &s[start + 2..];
                (!name.is_empty() && name.iter().copied().all(option_name_byte))
                    .then(|| String::from_utf8_lossy(&s[start..]).into_owned())
            })
            .collect()
    }

    /// A reader that hands out at most `.1` bytes per `read`, so strings
    /// cross read boundaries everywhere.
    struct Trickle<'a>(&'a [u8], usize);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// A 64-bit little-endian ELF image with the named sections (type,
    /// bytes) after a 64-byte header, then `.shstrtab`, then the section
    /// header table.
    fn elf_image(sections: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let mut image = vec![0u8; 64];
        image[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let mut names = b"\0".to_vec();
        let mut headers = vec![[0u8; 64]]; // SHN_UNDEF
        let all = sections
            .iter()
            .copied()
            .chain([(".shstrtab", 3, &[][..])])
            .collect::<Vec<_>>();
        let mut shstrtab_name = 0;
        for (name, kind, bytes) in &all {
            let name_at = names.len() as u32;
            names.extend_from_slice(name.as_bytes());
            names.push(0);
            if *name == ".shstrtab" {
                shstrtab_name = name_at;
                continue;
            }
            let mut h = [0u8; 64];
            h[0..4].copy_from_slice(&name_at.to_le_bytes());
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[0x18..0x20].copy_from_slice(&(image.len() as u64).to_le_bytes());
            h[0x20..0x28].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
            image.extend_from_slice(bytes);
            headers.push(h);
        }
        let mut h = [0u8; 64];
        h[0..4].copy_from_slice(&shstrtab_name.to_le_bytes());
        h[4..8].copy_from_slice(&3u32.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&(image.len() as u64).to_le_bytes());
        h[0x20..0x28].copy_from_slice(&(names.len() as u64).to_le_bytes());
        image.extend_from_slice(&names);
        headers.push(h);
        let shoff = image.len() as u64;
        for h in &headers {
            image.extend_from_slice(h);
        }
        image[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        image[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        image[0x3c..0x3e].copy_from_slice(&(headers.len() as u16).to_le_bytes());
        image[0x3e..0x40].copy_from_slice(&((headers.len() - 1) as u16).to_le_bytes());
        image
    }

    fn write_image(dir: &Path, name: &str, image: &[u8]) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, image).unwrap();
        path
    }

    fn needs(options: &[&str]) -> BTreeSet<String> {
        options.iter().map(|o| (*o).to_owned()).collect()
    }

    /// The read-only data sections are read first; an option found only
    /// elsewhere in the image still counts (the whole image is read then),
    /// and one found nowhere is refused by name.
    #[test]
    fn the_option_check_reads_the_read_only_data_first_and_the_whole_image_before_refusing() {
        let dir = tempfile::tempdir().unwrap();
        let image = elf_image(&[
            (".text", 1, b"\x90--in-text\0"),
            (".rodata", 1, b"usage\0--bind\0--ro-bind\0"),
            (".rodata.str1.1", 1, b"--tmpfs\0"),
            (".rodata.notes", 7, b"--in-a-note\0"),
            (".rodatax", 1, b"--in-rodatax\0"),
        ]);
        let path = write_image(dir.path(), "elf", &image);
        let file = File::open(&path).unwrap();
        assert_eq!(
            elf_rodata_literals(&file).unwrap(),
            Some(needs(&["--bind", "--ro-bind", "--tmpfs"])),
            "only PROGBITS sections named .rodata or .rodata.*"
        );
        assert_eq!(
            option_literals(&image),
            needs(&[
                "--bind",
                "--ro-bind",
                "--tmpfs",
                "--in-text",
                "--in-a-note",
                "--in-rodatax"
            ])
        );
        check_supported_options(&path, "elf", &needs(&["--bind", "--tmpfs"])).unwrap();
        // Outside the read-only data: found by the whole-image read.
        check_supported_options(&path, "elf", &needs(&["--bind", "--in-text"])).unwrap();
        match check_supported_options(&path, "elf", &needs(&["--bind", "--nowhere"])) {
            Err(BindError::UnsupportedOption { option, .. }) => assert_eq!(option, "--nowhere"),
            other => panic!("{other:?}"),
        }
    }

    /// Section headers that are not what the reader expects are not an
    /// error: the whole image is read, with the same answers.
    #[test]
    fn inconsistent_section_headers_fall_back_to_the_whole_image() {
        let dir = tempfile::tempdir().unwrap();
        let good = elf_image(&[(".rodata", 1, b"--bind\0"), (".data", 1, b"--data\0")]);
        let shoff = u64::from_le_bytes(good[0x28..0x30].try_into().unwrap()) as usize;
        let mut broken: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut edit = |what: &'static str, f: &dyn Fn(&mut Vec<u8>)| {
            let mut image = good.clone();
            f(&mut image);
            broken.push((what, image));
        };
        edit("32-bit class", &|i| i[4] = 1);
        edit("big-endian", &|i| i[5] = 2);
        edit("table past the end", &|i| {
            i[0x28..0x30].copy_from_slice(&(u64::MAX - 8).to_le_bytes())
        });
        edit("entry size", &|i| i[0x3a] = 40);
        edit("no sections", &|i| i[0x3c..0x3e].fill(0));
        edit("names index", &|i| i[0x3e] = 200);
        edit("section past the end", &|i| {
            // The `.rodata` header is entry 1; its size field.
            let at = shoff + 64 + 0x20;
            i[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        });
        edit("names past the end", &|i| {
            let at = shoff + 3 * 64 + 0x18;
            i[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        });
        edit("truncated table", &|i| i.truncate(shoff + 70));
        edit("more read-only data than is read at once", &|i| {
            // `.rodata` claims the whole file from offset 0, which is more
            // than the limit once the file is padded past it.
            let at = shoff + 64;
            i[at + 0x18..at + 0x20].copy_from_slice(&0u64.to_le_bytes());
            let len = RODATA_READ_MAX as u64 + 1;
            i[at + 0x20..at + 0x28].copy_from_slice(&len.to_le_bytes());
            i.resize(RODATA_READ_MAX + 1, 0);
        });
        edit("short file", &|i| i.truncate(40));
        let path = write_image(dir.path(), "good", &good);
        let file = File::open(&path).unwrap();
        assert_eq!(
            elf_rodata_literals(&file).unwrap(),
            Some(needs(&["--bind"]))
        );
        for (what, image) in &broken {
            let path = write_image(dir.path(), "broken", image);
            let file = File::open(&path).unwrap();
            assert_eq!(elf_rodata_literals(&file).unwrap(), None, "{what}");
            let whole = option_literals(image);
            for option in ["--bind", "--data", "--nowhere"] {
                let answer = check_supported_options(&path, what, &needs(&[option]));
                assert_eq!(answer.is_ok(), whole.contains(option), "{what}: {option}");
            }
        }
    }

    /// On the installed Bubblewrap the read-only data hold every option
    /// literal of the image, so the whole image is never read for it.
    #[test]
    fn the_installed_bwrap_has_every_option_literal_in_its_read_only_data() {
        let Ok(file) = File::open("/usr/bin/bwrap") else {
            eprintln!(
                "NOTE: /usr/bin/bwrap not readable; the crafted images above cover the reader"
            );
            return;
        };
        let image = fs::read("/usr/bin/bwrap").unwrap();
        let rodata = elf_rodata_literals(&file)
            .unwrap()
            .expect("read-only data sections");
        assert!(rodata.contains("--unshare-all"), "{rodata:?}");
        assert_eq!(rodata, option_literals(&image));
    }

    /// Reading an image in pieces finds what scanning it whole finds: no
    /// string is lost or split at a read boundary, and a string the end of
    /// the image ends still counts.
    #[test]
    fn the_chunked_option_scan_agrees_with_the_whole_image_scan() {
        let mut images: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"--a".to_vec(),
            b"\0--a\0--b".to_vec(),
            b"usage --bind\0--ro-bind\0\0--Bad\0--dev-bind-try\0--".to_vec(),
            b"--a".repeat(20_000),
            vec![b'-'; 40_000],
        ];
        // A long image whose strings straddle every chunk boundary.
        let mut long = Vec::new();
        for i in 0..9000 {
            long.extend_from_slice(format!("x--opt{}\0\x01--\0", i % 97).as_bytes());
        }
        images.push(long);
        for image in &images {
            let whole = option_literals(image);
            assert_eq!(whole, reference(image));
            for step in [
                1,
                2,
                3,
                5,
                64,
                SCAN_CHUNK - 1,
                SCAN_CHUNK,
                SCAN_CHUNK + 3,
                usize::MAX,
            ] {
                let read = option_literals_read(Trickle(image, step)).unwrap();
                assert_eq!(read, whole, "{step}-byte reads of {} bytes", image.len());
            }
        }
    }

    #[test]
    fn the_option_scan_agrees_with_the_plain_definition() {
        let crafted: &[&[u8]] = &[
            b"",
            b"\0",
            b"--",
            b"--a",
            b"---a",
            b"x---",
            b"--a--",
            b"--a-",
            b"usage --bind\0--ro-bind\0\0--Bad\0--dev-bind-try\0--",
            b"\xff\xfe--unshare-all",
            b"--cap-drop\0--x y\0trailing--seccomp",
        ];
        let long_string = b"--a".repeat(20_000);
        let dash_run = [b'-'; 5000];
        for image in crafted
            .iter()
            .copied()
            .chain([long_string.as_slice(), dash_run.as_slice()])
        {
            assert_eq!(option_literals(image), reference(image), "{image:?}");
        }
        // Pseudo-random images over a small alphabet rich in the bytes that
        // matter (NUL, `-`, name bytes, others).
        let alphabet = b"\0--ab9Z -";
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let mut image = Vec::new();
            for _ in 0..(state % 300) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                image.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            assert_eq!(option_literals(&image), reference(&image), "{image:?}");
            state = state.wrapping_add(1);
        }
        let bwrap = fs::read("/usr/bin/bwrap");
        match bwrap {
            Ok(image) => {
                let found = option_literals(&image);
                assert_eq!(found, reference(&image));
                assert!(found.contains("--unshare-all"), "{found:?}");
                assert_eq!(option_literals_read(image.as_slice()).unwrap(), found);
                for step in [1, 7, 4096, SCAN_CHUNK - 1, SCAN_CHUNK + 1] {
                    let read = option_literals_read(Trickle(image.as_slice(), step)).unwrap();
                    assert_eq!(read, found, "{step}-byte reads");
                }
            }
            Err(e) => eprintln!(
                "NOTE: /usr/bin/bwrap not readable ({e}); compared the crafted images only"
            ),
        }
    }
}
