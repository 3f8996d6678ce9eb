//! A host killed by SIGKILL with a broker running leaves its private
//! directory and socket behind; the next broker started under the same
//! parent removes them, proving the owner dead by the lock it held. A live
//! broker's directory, and a dead one's that holds anything else, are never
//! removed.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use splash_broker::{Catalog, CatalogKind, Entry, HostBroker, Method};

/// The parent directory the child host starts its broker in.
const PARENT: &str = "SPLASH_TEST_BROKER_PARENT";

fn catalog() -> Catalog {
    Catalog::new(CatalogKind::Origin)
        .with(Entry::origin("api.o", "http://127.0.0.1:9", &[Method::Get]).expect("entry"))
        .expect("catalog")
}

fn broker_directories(parent: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".splash-broker-"))
        })
        .collect();
    dirs.sort();
    dirs
}

/// Not a test of its own: the host that
/// [`a_killed_hosts_broker_directory_is_swept_by_the_next_start`] runs as a
/// child process and kills. It starts a broker, says `READY`, and waits.
#[test]
#[ignore = "the child role of a_killed_hosts_broker_directory_is_swept_by_the_next_start"]
fn killed_broker_host_role() {
    let parent = std::env::var(PARENT).expect("run only by the sweep test");
    let _broker = HostBroker::start(&parent, catalog()).expect("start");
    println!("READY");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// Starts the child host and kills it once its broker runs.
fn kill_a_host_with_a_broker(parent: &Path) {
    let mut host = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "killed_broker_host_role",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PARENT, parent)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("host");
    let stdout = host.stdout.take().expect("stdout");
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.ends_with("READY"));
    assert!(ready, "the host did not start its broker");
    host.kill().expect("SIGKILL");
    host.wait().expect("reap");
}

#[test]
fn a_killed_hosts_broker_directory_is_swept_by_the_next_start() {
    let parent = tempfile::Builder::new()
        .prefix("splash-broker-killed-")
        .tempdir()
        .expect("parent");
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o700)).expect("chmod");

    kill_a_host_with_a_broker(parent.path());
    // Control: the kill really left the directory and its socket.
    let left = broker_directories(parent.path());
    assert_eq!(left.len(), 1, "the killed host's directory: {left:?}");
    assert!(left[0].join("broker.sock").exists(), "its socket");

    let next = HostBroker::start(parent.path(), catalog()).expect("the next start");
    assert!(!left[0].exists(), "swept by the next start");
    assert_eq!(
        broker_directories(parent.path()),
        [next.directory_path().to_path_buf()],
        "only the next broker's own"
    );

    // A live owner's directory survives a sweep, from a start and on its own.
    let third = HostBroker::start(parent.path(), catalog()).expect("a third start");
    assert!(next.directory_path().exists(), "a held directory is kept");
    assert_eq!(HostBroker::sweep(parent.path()).expect("sweep"), 0);
    assert!(next.directory_path().exists() && third.directory_path().exists());
    next.shutdown().expect("shutdown");
    third.shutdown().expect("shutdown");
    assert!(broker_directories(parent.path()).is_empty());

    // A dead owner's directory holding anything but the socket is left
    // alone: a sweep removes only what a broker makes.
    kill_a_host_with_a_broker(parent.path());
    let left = broker_directories(parent.path());
    assert_eq!(left.len(), 1, "{left:?}");
    std::fs::write(left[0].join("kept"), b"").expect("a stranger's file");
    assert_eq!(HostBroker::sweep(parent.path()).expect("sweep"), 0);
    assert!(left[0].join("kept").exists() && left[0].join("broker.sock").exists());
    std::fs::remove_file(left[0].join("kept")).expect("remove");
    assert_eq!(HostBroker::sweep(parent.path()).expect("sweep"), 1);
    assert!(broker_directories(parent.path()).is_empty());
}
