//! What both embedding examples share: the probe's manifest, a compiled
//! example policy, and error chains.

use std::path::{Path, PathBuf};

use splash_protocol::{CapabilityManifest, Grant, GrantFormat, Token};

/// The manifest of one session: the probe's echo and sleep tools.
pub fn manifest(session: &str) -> Result<CapabilityManifest, String> {
    let mut grants = Vec::new();
    for tool in ["probe.echo", "probe.sleep"] {
        let mut g = Grant::new(
            Token::new(tool).map_err(|e| e.to_string())?,
            GrantFormat::Json,
        );
        g.max_calls = 4;
        g.max_input_bytes = 1024;
        g.max_output_bytes = 64 * 1024;
        grants.push(g);
    }
    Ok(CapabilityManifest {
        protocol_version: splash_protocol::PROTOCOL_VERSION,
        session_id: Token::new(session).map_err(|e| e.to_string())?,
        grants,
    })
}

/// Compiles a policy for the probe next to this example into `dir`.
pub fn compile_example_artifact(dir: &Path) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/<profile>/examples/host -> target/<profile>/splash-probe
    let probe = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("splash-probe"))
        .filter(|p| p.is_file())
        .ok_or("the probe worker is not built; run `cargo build --bins` first")?;
    let bwrap = ["/usr/bin/bwrap", "/bin/bwrap"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .ok_or("bubblewrap is not installed")?;
    let worker_dir = dir.join("bin");
    std::fs::create_dir_all(&worker_dir).map_err(|e| e.to_string())?;
    std::fs::copy(&probe, worker_dir.join("splash-probe")).map_err(|e| e.to_string())?;

    let mut mounts = String::new();
    for d in ["/usr", "/lib", "/lib64", "/bin"] {
        if Path::new(d).exists() {
            mounts.push_str(&format!("  runtime \"{d}\" at \"{d}\"\n"));
        }
    }
    let source = format!(
        r#"splashpol 1
policy "example-host" {{
  bubblewrap "{bwrap}"
  worker "/opt/worker/splash-probe"
  runtime "{worker_dir}" at "/opt/worker"
{mounts}
  tmp private size 8 MiB
  writes bounded
  user-namespaces none
  pin mounts, executables
  seccomp deny-known-escape-surface
  watchdog session 30 s call 5 s
}}
"#,
        worker_dir = worker_dir.display(),
    );
    let outcome = splashpol::check_source("example-host.splashpol", &source);
    let policy = match outcome.policy {
        Some(p) if !outcome.has_errors() => p,
        _ => return Err(outcome.render_human("example-host.splashpol", &source)),
    };
    let bytes =
        splashpol::artifact::write(&policy, source.as_bytes()).map_err(|e| e.to_string())?;
    let path = dir.join("example-host.splashc");
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    Ok(path)
}

/// An error and its sources, `: `-separated.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
