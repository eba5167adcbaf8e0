//! A PostgreSQL server of one test's own, which the test may stop, start, freeze and thaw
//! (the shared test server must never be: other tests run on it at the same time).

use std::path::PathBuf;
use std::process::Command;

pub struct PrivatePostgres {
    pub url: String,
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
    frozen: Vec<u32>,
}

impl PrivatePostgres {
    /// A new cluster (initdb) on a free loopback port, started.
    pub fn start() -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL server binaries under /usr/lib/postgresql (scripts/setup.sh)")
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").exists())
            .max()
            .expect("an initdb under /usr/lib/postgresql/*/bin");
        let dir = tempfile::Builder::new()
            .prefix("tidemark-private-pg")
            .tempdir()
            .expect("temp dir");
        if is_root() {
            run(Command::new("chown").arg("postgres:").arg(dir.path()));
        }
        let port = super::free_port();
        let pg = PrivatePostgres {
            url: format!("postgres://tidemark@127.0.0.1:{port}/postgres"),
            dir,
            port,
            bin,
            frozen: Vec::new(),
        };
        run(pg.as_postgres("initdb").arg("-D").arg(pg.data()).args([
            "-U",
            "tidemark",
            "--auth=trust",
            "-E",
            "UTF8",
        ]));
        pg.start_again();
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A PostgreSQL program run as the `postgres` account when we are root (PostgreSQL
    /// refuses to run as root).
    fn as_postgres(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if is_root() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        }
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c max_connections=100",
            self.port,
            self.dir.path().display()
        );
        run(self
            .as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-t", "60", "-o", &options, "start"]));
    }

    /// Stops the server as a restart or a failover does: connections are ended (57P01).
    pub fn stop(&self) {
        run(self
            .as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"]));
    }

    /// Freezes every process of the server (SIGSTOP), as a paused VM or a storage stall
    /// does: connections stay open and nothing answers.
    pub fn freeze(&mut self) {
        let pid_file =
            std::fs::read_to_string(self.data().join("postmaster.pid")).expect("postmaster.pid");
        let postmaster: u32 = pid_file
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("the postmaster's pid on postmaster.pid's first line");
        let mut pids = vec![postmaster];
        pids.extend(children_of(postmaster));
        for pid in &pids {
            run(Command::new("kill").args(["-STOP", &pid.to_string()]));
        }
        self.frozen = pids;
    }

    /// Lets a frozen server go on.
    pub fn thaw(&mut self) {
        for pid in self.frozen.drain(..) {
            let _ = Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status();
        }
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.thaw();
        let _ = self
            .as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|uids| uids.split_whitespace().next() == Some("0"))
        })
        .unwrap_or(false)
}

fn children_of(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The fields after the command name (in parentheses): state, then the parent's pid.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a PostgreSQL command");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real file system of `mib` MiB (tmpfs) mounted on a fresh directory, for tests of a
/// full disk; unmounted when dropped. Needs root, which the test machines give.
pub struct SmallDisk {
    pub dir: tempfile::TempDir,
}

impl SmallDisk {
    pub fn mount(mib: u32) -> Self {
        let dir = tempfile::tempdir().expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("run mount");
        assert!(
            out.status.success(),
            "a small tmpfs is needed for the full-disk test (run as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SmallDisk { dir }
    }

    pub fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Fills what is left of the disk with one file; removing it frees the space again.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write as _;
        let path = self.dir.path().join("filler");
        let mut f = std::fs::File::create(&path).expect("filler");
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        // The last partial chunk, byte by byte in small pieces.
        let small = [0u8; 512];
        while f.write_all(&small).is_ok() {}
        let _ = f.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
