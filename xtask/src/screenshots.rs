//! `cargo xtask screenshots`: the guide's pictures of the two reports people look at, made from
//! a real run on fixtures/minmax by the headless Chromium the end-to-end tests use (Debian's
//! chromium, installed by .ci/setup): the terminal report (its ANSI colours turned into HTML)
//! and the HTML report. Written to docs/guide/img/.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Where the pictures go, from the repository root.
const OUT: &str = "docs/guide/img";

pub fn run() -> Result<()> {
    let root = crate::root();
    let sfl = crate::build_sfl()?;
    let work = root.join("target/screenshots");
    let _ = std::fs::remove_dir_all(&work);
    let fixture = work.join("minmax");
    crate::copy_tree(&root.join("fixtures/minmax"), &fixture)?;
    let out = Command::new(&sfl)
        .args(["sfl", "--color", "always", "--top", "5"])
        .current_dir(&fixture)
        .output()
        .context("running cargo sfl")?;
    if out.status.code() != Some(0) {
        bail!("cargo sfl on minmax exited with {}", out.status);
    }
    let terminal = work.join("terminal.html");
    std::fs::write(&terminal, terminal_page(&String::from_utf8_lossy(&out.stdout)))?;
    let page = work.join("html-report");
    crate::run(
        Command::new(&sfl)
            .args(["sfl", "report", "--format", "html", "-o"])
            .arg(&page)
            .current_dir(&fixture),
    )?;
    let img = root.join(OUT);
    std::fs::create_dir_all(&img)?;
    let profile = work.join("chromium-profile");
    screenshot(&terminal, &img.join("terminal-report.png"), (1500, 680), &profile)?;
    screenshot(
        &page.join("index.html"),
        &img.join("html-report.png"),
        (1280, 900),
        &profile,
    )?;
    eprintln!("wrote {OUT}/terminal-report.png and {OUT}/html-report.png");
    Ok(())
}

/// Headless Chromium's picture of `page` at `size`, with its scripts run first; `profile` is a
/// fresh user-data directory of its own.
fn screenshot(page: &Path, png: &Path, (w, h): (u32, u32), profile: &Path) -> Result<()> {
    let chromium = std::env::var_os("SFL_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let _ = std::fs::remove_dir_all(profile);
    let status = Command::new(&chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={w},{h}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .status()
        .with_context(|| format!("cannot start {} (run .ci/setup)", chromium.display()))?;
    if !status.success() || !png.is_file() {
        bail!("chromium made no screenshot of {}", page.display());
    }
    Ok(())
}

/// The terminal report as a page: a dark terminal, ANSI SGR codes (bold, the 8 colours) as
/// styled spans, everything else escaped.
fn terminal_page(ansi: &str) -> String {
    let mut body = String::new();
    let mut open = false;
    // The style in force: sequences add to it until a reset (`0` or nothing).
    let mut style = String::new();
    let mut rest = ansi;
    while let Some(i) = rest.find("\x1b[") {
        body.push_str(&escape(&rest[..i]));
        let after = &rest[i + 2..];
        let Some(end) = after.find('m') else {
            rest = after;
            continue;
        };
        if open {
            body.push_str("</span>");
            open = false;
        }
        let params = &after[..end];
        if params.is_empty() || params.split(';').any(|p| p == "0") {
            style.clear();
        }
        style.push_str(&sgr_style(params));
        if !style.is_empty() {
            let _ = write!(body, "<span style=\"{style}\">");
            open = true;
        }
        rest = &after[end + 1..];
    }
    body.push_str(&escape(rest));
    if open {
        body.push_str("</span>");
    }
    format!(
        "<!doctype html><meta charset=\"utf-8\"><style>body{{margin:0;background:#1e1e1e}}\
         pre{{margin:0;padding:16px;color:#d4d4d4;font:14px/1.35 'DejaVu Sans Mono',monospace;white-space:pre}}</style>\
         <pre>$ cargo sfl\n{body}</pre>"
    )
}

/// CSS for one SGR sequence's parameters (`1;31`, `36`, `0`).
fn sgr_style(params: &str) -> String {
    const COLOURS: [&str; 8] = [
        "#808080", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#e5e5e5",
    ];
    let mut css = String::new();
    for p in params.split(';') {
        match p.parse::<u8>() {
            Ok(1) => css.push_str("font-weight:bold;"),
            Ok(n @ 30..=37) => {
                let _ = write!(css, "color:{};", COLOURS[usize::from(n - 30)]);
            }
            Ok(n @ 90..=97) => {
                let _ = write!(css, "color:{};", COLOURS[usize::from(n - 90)]);
            }
            _ => {}
        }
    }
    css
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_colours_become_spans_and_text_is_escaped() {
        let page = terminal_page("\x1b[1mMost\x1b[0m <a>\n\x1b[36m\x1b[1msrc/lib.rs\x1b[0m");
        assert!(
            page.contains("<span style=\"font-weight:bold;\">Most</span> &lt;a&gt;"),
            "{page}"
        );
        assert!(
            page.contains("<span style=\"color:#29b8db;font-weight:bold;\">src/lib.rs</span>"),
            "{page}"
        );
        assert!(!page.contains('\x1b'));
        assert_eq!(sgr_style("1;31"), "font-weight:bold;color:#f14c4c;");
    }
}
