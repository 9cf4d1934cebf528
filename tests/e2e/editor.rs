//! The editor: `--message-format json` lines are cargo's own messages (`cargo_metadata`'s
//! parser reads every one, and the suspects point at the lines the JSON report shows), and the
//! real rust-analyzer, with cargo sfl as its check command, shows the fault's line as a warning
//! when the faulty file is saved, and nothing on a line no failing test ran.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use libtest_mimic::Trial;
use serde_json::{Value, json};

use crate::support::{Result, check, copy_fixture, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("editor::cargo_messages", cargo_messages),
        Trial::test("editor::rust_analyzer_shows_the_suspects_on_save", rust_analyzer),
    ]
}

/// Every ranked line of a report, and the (file, line) of each suspect it shows.
type Lines = (BTreeSet<u64>, Vec<(String, u32)>);

/// The ranked lines of the JSON report (every entry's lines; `more` given to the report) and
/// the lines it shows first.
fn ranked_lines(dir: &Path, more: &[&str]) -> Result<Lines> {
    let json = sfl(&[&["report", "--format", "json"], more].concat(), dir);
    let v: Value = serde_json::from_slice(&json.stdout)?;
    let ranking = &v["rankings"][0];
    let mut lines = BTreeSet::new();
    for u in ranking["units"].as_array().ok_or("no units")? {
        lines.insert(u["line"].as_u64().unwrap_or(0));
        for m in u["members"].as_array().into_iter().flatten() {
            lines.insert(m["line"].as_u64().unwrap_or(0));
        }
    }
    Ok((lines, crate::support::shown_in_json(ranking)))
}

/// A run and a report with `--message-format json`: every stdout line is a cargo message;
/// the build's artifacts come through; one `compiler-message` per shown line, at the lines
/// the JSON report shows, with the package and target of the member and the failing tests as
/// children; the line ranked first is a warning.
fn cargo_messages() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let run = sfl(&["--message-format", "json"], dir);
    check(run.status.code() == Some(0), || show(&run))?;
    let (_, shown) = ranked_lines(dir, &[])?;
    let report = sfl(&["report", "--message-format", "json"], dir);
    for (out, from_build) in [(&run, true), (&report, false)] {
        let text = String::from_utf8_lossy(&out.stdout);
        let mut artifacts = 0;
        let mut suspects = Vec::new();
        for line in text.lines() {
            let msg: cargo_metadata::Message =
                serde_json::from_str(line).map_err(|e| format!("not a cargo message ({e}): {line}"))?;
            match msg {
                cargo_metadata::Message::CompilerArtifact(_) => artifacts += 1,
                cargo_metadata::Message::CompilerMessage(m) => suspects.push(m),
                _ => {}
            }
        }
        check((artifacts > 0) == from_build, || {
            format!("{artifacts} artifacts passed through (from the build: {from_build})\n{text}")
        })?;
        let at: Vec<(String, u32)> = suspects
            .iter()
            .map(|m| {
                let p = m.message.spans.iter().find(|s| s.is_primary).expect("a primary span");
                (p.file_name.clone(), p.line_start as u32)
            })
            .collect();
        check(at == shown, || {
            format!("messages at {at:?}, the JSON report shows {shown:?}")
        })?;
        let top = &suspects[0];
        check(
            top.target.name == "fixture_minmax"
                && top.package_id.repr.contains("fixture-minmax")
                && top.message.level == cargo_metadata::diagnostic::DiagnosticLevel::Warning
                && top.message.message.contains("rank 1 of")
                && top.message.children.len() == 3
                && top
                    .message
                    .rendered
                    .as_deref()
                    .is_some_and(|r| r.contains("--> src/lib.rs:16:")),
            || format!("{top:#?}"),
        )?;
        check(
            line_has(&text, "\"manifest_path\":")
                && line_has(&text, "\"reason\":\"compiler-message\"")
                && line_has(&text, "\"message\":{\"$message_type\":\"diagnostic\","),
            || text.to_string(),
        )?;
    }
    Ok(())
}

fn line_has(text: &str, s: &str) -> bool {
    text.lines().any(|l| l.contains(s))
}

/// rust-analyzer over stdio on minmax after a first run, `check.overrideCommand` running cargo
/// sfl: saving src/lib.rs publishes the fault's line (16) as a warning, and every diagnostic
/// is on a line some failing test ran (the failing tests' panic sites are hints).
fn rust_analyzer() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path().canonicalize()?;
    let first = sfl(&[], &dir);
    check(first.status.code() == Some(0), || show(&first))?;
    // Every line a failing test ran: the library's ranked lines and the tests' own (a failing
    // test's panic site is related information, which the editor shows as a hint there).
    let (ran, _) = ranked_lines(&dir, &["--include-test-code"])?;
    let sfl_bin = env!("CARGO_BIN_EXE_cargo-sfl");
    let mut server = Server::start(&dir)?;
    let root = format!("file://{}", dir.display());
    let file = format!("{root}/src/lib.rs");
    let options = json!({
        "check": {"overrideCommand": [sfl_bin, "sfl", "--message-format", "json", "--color", "never"]},
        "checkOnSave": true,
        "cachePriming": {"enable": false},
        "procMacro": {"enable": false},
    });
    server.request(
        "initialize",
        json!({
            "processId": std::process::id(),
            "rootUri": root,
            "capabilities": {"textDocument": {"publishDiagnostics": {"relatedInformation": true}}},
            "initializationOptions": options,
        }),
    )?;
    server.notify("initialized", json!({}))?;
    let text = std::fs::read_to_string(dir.join("src/lib.rs"))?;
    server.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file, "languageId": "rust", "version": 1, "text": text}}),
    )?;
    // Saved once the workspace has loaded, again every 20 s until the suspects arrive.
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut next_save = Instant::now() + Duration::from_secs(3);
    let diagnostics = loop {
        if Instant::now() > deadline {
            return Err(format!("no diagnostics of cargo sfl within 180 s; stderr:\n{}", server.stderr()).into());
        }
        if Instant::now() >= next_save {
            server.notify("textDocument/didSave", json!({"textDocument": {"uri": file}}))?;
            next_save = Instant::now() + Duration::from_secs(20);
        }
        let Some(msg) = server.next(Duration::from_millis(500))? else {
            continue;
        };
        if msg["method"] == "textDocument/publishDiagnostics"
            && msg["params"]["uri"] == file.as_str()
            && msg["params"]["diagnostics"].as_array().is_some_and(|d| {
                d.iter()
                    .any(|d| d["message"].as_str().is_some_and(|m| m.contains("suspicious line")))
            })
        {
            break msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
        }
    };
    server.stop();
    let fault = diagnostics
        .iter()
        .find(|d| d["range"]["start"]["line"] == 15)
        .ok_or_else(|| format!("no diagnostic on line 16: {diagnostics:#?}"))?;
    check(
        fault["severity"] == 2 && fault["message"].as_str().is_some_and(|m| m.contains("rank 1")),
        || format!("{fault:#}"),
    )?;
    for d in &diagnostics {
        let line = d["range"]["start"]["line"].as_u64().unwrap_or(u64::MAX) + 1;
        check(ran.contains(&line), || {
            format!("a diagnostic on line {line}, which no failing test ran: {d:#}")
        })?;
    }
    Ok(())
}

/// A language server over stdio: requests and notifications out, messages in on a thread.
struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    stderr_file: tempfile::NamedTempFile,
}

impl Server {
    fn start(dir: &Path) -> Result<Server> {
        let stderr_file = tempfile::NamedTempFile::new()?;
        let mut child = Command::new(rust_analyzer_binary()?)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr_file.reopen()?)
            .spawn()
            .map_err(|e| format!("cannot start rust-analyzer ({e}); .ci/setup installs it"))?;
        let stdin = child.stdin.take().ok_or("stdin")?;
        let stdout = child.stdout.take().ok_or("stdout")?;
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(msg) = read_message(&mut reader) {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Ok(Server {
            child,
            stdin,
            messages,
            next_id: 1,
            stderr_file,
        })
    }

    fn send(&mut self, msg: Value) -> Result {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Sends a request and waits for its response (answering the server's own requests).
    fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(msg) = self.next(Duration::from_millis(500))?
                && msg["id"] == id
                && msg.get("method").is_none()
            {
                return Ok(msg);
            }
        }
        Err(format!("no response to {method}; stderr:\n{}", self.stderr()).into())
    }

    fn notify(&mut self, method: &str, params: Value) -> Result {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// The next message, `None` after `wait`; a request of the server is answered with `null`.
    fn next(&mut self, wait: Duration) -> Result<Option<Value>> {
        match self.messages.recv_timeout(wait) {
            Ok(msg) => {
                if msg.get("method").is_some()
                    && let Some(id) = msg.get("id")
                {
                    self.send(json!({"jsonrpc": "2.0", "id": id, "result": null}))?;
                }
                Ok(Some(msg))
            }
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => {
                Err(format!("rust-analyzer exited; stderr:\n{}", self.stderr()).into())
            }
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_file.path()).unwrap_or_default()
    }

    fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null);
        let _ = self.notify("exit", Value::Null);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// rust-analyzer: the toolchain's (`rustup component add rust-analyzer`), else on the PATH.
fn rust_analyzer_binary() -> Result<std::path::PathBuf> {
    let out = Command::new("rustup").args(["which", "rust-analyzer"]).output();
    if let Ok(out) = out
        && out.status.success()
    {
        return Ok(String::from_utf8_lossy(&out.stdout).trim().into());
    }
    Ok("rust-analyzer".into())
}

/// One `Content-Length`-framed JSON-RPC message; `None` at the end of the stream.
fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some(n) = header.strip_prefix("Content-Length: ") {
            length = n.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
