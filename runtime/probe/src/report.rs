//! `probe.report`: what the worker sees from inside.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;

use serde_json::{Map, Value, json};

use crate::errno::io_error_json;
use crate::sys;

/// Builds the report. `input` may name paths to `statfs`:
/// `{"statfs": ["/tmp", "/workspace/scratch"]}`.
pub fn report(input: &Value) -> Result<Value, String> {
    let statfs_paths: Vec<String> = match input.get("statfs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| "`statfs` must be a list of path strings".to_owned())
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("`statfs` must be a list of path strings".into()),
    };
    let ids = sys::ids();
    let status = proc_status();
    let mut out = Map::new();
    out.insert("pid".into(), json!(std::process::id()));
    out.insert("ppid".into(), json!(sys::parent_pid()));
    out.insert(
        "ids".into(),
        json!({"uid": ids.uid, "euid": ids.euid, "gid": ids.gid, "egid": ids.egid}),
    );
    out.insert("uid_map".into(), read_text("/proc/self/uid_map"));
    out.insert("gid_map".into(), read_text("/proc/self/gid_map"));
    out.insert("setgroups".into(), read_text("/proc/self/setgroups"));
    out.insert(
        "cwd".into(),
        match std::env::current_dir() {
            Ok(p) => json!(p.to_string_lossy()),
            Err(e) => json!({"error": io_error_json(&e)}),
        },
    );
    out.insert(
        "argv".into(),
        json!(
            std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        ),
    );
    out.insert("exe".into(), link("/proc/self/exe"));
    let env: BTreeMap<String, String> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    out.insert("environment".into(), json!(env));
    let pick = |k: &str| status.get(k).cloned().map_or(Value::Null, Value::String);
    out.insert(
        "capabilities".into(),
        json!({
            "inheritable": pick("CapInh"),
            "permitted": pick("CapPrm"),
            "effective": pick("CapEff"),
            "bounding": pick("CapBnd"),
            "ambient": pick("CapAmb"),
        }),
    );
    out.insert("no_new_privs".into(), numeric(status.get("NoNewPrivs")));
    out.insert("seccomp".into(), numeric(status.get("Seccomp")));
    out.insert(
        "seccomp_filters".into(),
        numeric(status.get("Seccomp_filters")),
    );
    out.insert("status".into(), json!(status));
    out.insert("fds".into(), fds());
    out.insert("mounts".into(), mounts());
    out.insert("network_interfaces".into(), interfaces());
    out.insert("limits".into(), limits());
    out.insert("namespaces".into(), namespaces());
    out.insert("cgroup".into(), read_text("/proc/self/cgroup"));
    out.insert("visible_pids".into(), visible_pids());
    out.insert(
        "hostname".into(),
        match sys::nodename() {
            Ok(n) => json!(n),
            Err(e) => json!({"error": io_error_json(&e)}),
        },
    );
    out.insert(
        "statfs".into(),
        Value::Array(statfs_paths.iter().map(|p| statfs(p)).collect()),
    );
    Ok(Value::Object(out))
}

fn read_text(path: &str) -> Value {
    match fs::read_to_string(path) {
        Ok(s) => json!(s),
        Err(e) => json!({"error": io_error_json(&e)}),
    }
}

fn link(path: &str) -> Value {
    match fs::read_link(path) {
        Ok(p) => json!(p.to_string_lossy()),
        Err(e) => json!({"error": io_error_json(&e)}),
    }
}

fn numeric(v: Option<&String>) -> Value {
    match v.map(|s| s.parse::<u64>()) {
        Some(Ok(n)) => json!(n),
        Some(Err(_)) => json!(v),
        None => Value::Null,
    }
}

/// `/proc/self/status` as key → value (whitespace-trimmed).
fn proc_status() -> BTreeMap<String, String> {
    let Ok(text) = fs::read_to_string("/proc/self/status") else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Open descriptors and their targets, without the directory handle used
/// to list them.
fn fds() -> Value {
    let dir = match fs::read_dir("/proc/self/fd") {
        Ok(d) => d,
        Err(e) => return json!({"error": io_error_json(&e)}),
    };
    let own = format!("/proc/{}/fd", std::process::id());
    let mut out = BTreeMap::new();
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(fd) = name.parse::<u32>() else {
            continue;
        };
        match fs::read_link(entry.path()) {
            Ok(t) => {
                let t = t.to_string_lossy().into_owned();
                if t == own {
                    continue;
                }
                out.insert(fd, json!(t));
            }
            // The listing handle is closed by the time it is resolved.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                out.insert(fd, json!({"error": io_error_json(&e)}));
            }
        }
    }
    // The worker library reads and writes frames through close-on-exec
    // duplicates of descriptors 0 and 1; name them so a reader can tell them
    // from inherited descriptors.
    let stdio: Vec<(u32, Value)> = (0..=2)
        .filter_map(|fd| out.get(&fd).map(|t| (fd, t.clone())))
        .collect();
    json!(
        out.iter()
            .map(|(fd, target)| {
                let same = stdio
                    .iter()
                    .find(|(_, t)| *fd > 2 && t == target && target.is_string())
                    .map(|(s, _)| *s);
                json!({"fd": fd, "target": target, "duplicate_of_stdio": same})
            })
            .collect::<Vec<_>>()
    )
}

/// Undoes the octal escapes of `/proc/self/mountinfo` (`\040` and friends).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn mounts() -> Value {
    let text = match fs::read_to_string("/proc/self/mountinfo") {
        Ok(t) => t,
        Err(e) => return json!({"error": io_error_json(&e)}),
    };
    let mut out = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.len() < 6 || fields.len() < sep + 3 {
            continue;
        }
        let options: Vec<&str> = fields[5].split(',').collect();
        out.push(json!({
            "mount_point": unescape(fields[4]),
            "root": unescape(fields[3]),
            "fs_type": fields[sep + 1],
            "source": unescape(fields[sep + 2]),
            "options": options,
            "super_options": fields.get(sep + 3).copied().unwrap_or(""),
            "read_only": options.contains(&"ro"),
        }));
    }
    Value::Array(out)
}

fn interfaces() -> Value {
    let mut names = std::collections::BTreeSet::new();
    if let Ok(text) = fs::read_to_string("/proc/self/net/dev") {
        for line in text.lines().skip(2) {
            if let Some((name, _)) = line.split_once(':') {
                names.insert(name.trim().to_owned());
            }
        }
    }
    let sys_class: Value = match fs::read_dir("/sys/class/net") {
        Ok(d) => {
            let mut v: Vec<String> = d
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            json!(v)
        }
        Err(e) => json!({"error": io_error_json(&e)}),
    };
    json!({"proc_net_dev": names, "sys_class_net": sys_class})
}

fn limits() -> Value {
    let text = match fs::read_to_string("/proc/self/limits") {
        Ok(t) => t,
        Err(e) => return json!({"error": io_error_json(&e)}),
    };
    let mut out = BTreeMap::new();
    for line in text.lines().skip(1) {
        // Columns: a name padded to 26 bytes, then soft, hard and units.
        if line.len() < 26 {
            continue;
        }
        let (name, rest) = line.split_at(26);
        let cols: Vec<&str> = rest.split_whitespace().collect();
        if cols.len() < 2 {
            continue;
        }
        out.insert(
            name.trim().to_owned(),
            json!({"soft": cols[0], "hard": cols[1], "units": cols.get(2).copied()}),
        );
    }
    json!(out)
}

fn namespaces() -> Value {
    let mut out = BTreeMap::new();
    let Ok(dir) = fs::read_dir("/proc/self/ns") else {
        return json!(out);
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Ok(t) = fs::read_link(e.path()) {
            out.insert(name, t.to_string_lossy().into_owned());
        }
    }
    json!(out)
}

fn visible_pids() -> Value {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Value::Null;
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect();
    pids.sort_unstable();
    json!(pids)
}

fn statfs(path: &str) -> Value {
    let Ok(c) = CString::new(std::path::Path::new(path).as_os_str().as_bytes()) else {
        return json!({"path": path, "error": "path contains a NUL byte"});
    };
    match sys::statfs(&c) {
        Ok(st) => json!({
            "path": path,
            "fs_type": format!("{:#x}", st.fs_type),
            "block_size": st.block_size,
            "size_bytes": st.blocks.saturating_mul(st.block_size),
            "free_bytes": st.blocks_free.saturating_mul(st.block_size),
            "available_bytes": st.blocks_available.saturating_mul(st.block_size),
            "files": st.files,
            "files_free": st.files_free,
            "read_only": st.flags & 1 != 0,
            "flags": st.flags,
        }),
        Err(e) => json!({"path": path, "error": io_error_json(&e)}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(r"/a\040b\011c\134d"), "/a b\tc\\d");
        assert_eq!(unescape(r"/plain"), "/plain");
        assert_eq!(unescape(r"/short\04"), r"/short\04");
        assert_eq!(unescape(r"/bad\08x"), r"/bad\08x");
    }

    #[test]
    fn limits_are_parsed_by_name() {
        let l = limits();
        assert!(l["Max open files"]["soft"].is_string(), "{l}");
        assert_eq!(l["Max cpu time"]["units"], json!("seconds"));
    }
}
