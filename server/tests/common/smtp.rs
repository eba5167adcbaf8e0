//! A real SMTP server for the tests: `python3 -m aiosmtpd` with its debugging handler, which
//! prints every message it receives (scripts/setup.sh installs it).

use std::io::Read as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct SmtpSink {
    child: std::process::Child,
    out: Arc<Mutex<String>>,
    port: u16,
}

/// One received message, its quoted-printable soft line breaks undone.
#[derive(Debug, Clone)]
pub struct SinkMessage {
    pub to: String,
    pub subject: String,
    pub text: String,
}

impl SmtpSink {
    /// A sink on a free loopback port.
    pub fn start_anywhere() -> Self {
        Self::start(super::free_port())
    }

    /// A sink on `port` (a test that starts the server before the sink picks it).
    pub fn start(port: u16) -> Self {
        let mut child = std::process::Command::new("python3")
            .args([
                "-u",
                "-m",
                "aiosmtpd",
                "-n",
                "-c",
                "aiosmtpd.handlers.Debugging",
                "-l",
            ])
            .arg(format!("127.0.0.1:{port}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("python3 -m aiosmtpd (pip install aiosmtpd; scripts/setup.sh does)");
        let out = Arc::new(Mutex::new(String::new()));
        let mut stdout = child.stdout.take().expect("piped stdout");
        let sink = out.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("sink output")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let deadline = Instant::now() + Duration::from_secs(15);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "aiosmtpd did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        SmtpSink { child, out, port }
    }

    /// `TIDEMARK_SMTP_URL` for a server that sends here.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Everything the sink printed.
    pub fn output(&self) -> String {
        self.out.lock().expect("sink output").clone()
    }

    /// The complete messages received so far, in order.
    pub fn messages(&self) -> Vec<SinkMessage> {
        let output = self.output();
        output
            .split("---------- MESSAGE FOLLOWS ----------")
            .skip(1)
            // A message still being printed has no end line yet.
            .filter_map(|m| m.split_once("------------ END MESSAGE ------------"))
            .map(|(raw, _)| raw)
            .map(|raw| {
                let text = raw.replace("=\n", "").replace("=3D", "=");
                let header = |name: &str| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(name))
                        .unwrap_or_default()
                        .trim()
                        .to_owned()
                };
                SinkMessage {
                    to: header("To:"),
                    subject: header("Subject:"),
                    text: text.clone(),
                }
            })
            .collect()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
