//! The terminal: cargo-style status lines, warnings and errors on stderr, progress bars, and
//! colour. Nothing here writes to stdout, which carries only the report.
//!
//! Progress bars draw only when stderr is a terminal (and not with `-q` or `-v`); status lines
//! and warnings are printed above any bar, so the two never garble each other.

use std::sync::OnceLock;
use std::time::Duration;

use console::{Style, Term};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// When to colour the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Colour when the stream is a terminal (and NO_COLOR is unset).
    #[default]
    Auto,
    Always,
    Never,
}

/// How much goes to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Errors and warnings only.
    Quiet,
    /// Status lines and progress bars.
    Normal,
    /// Also every test as it finishes, and cargo's own output.
    Verbose,
}

struct Ui {
    verbosity: Verbosity,
    bars: MultiProgress,
}

static UI: OnceLock<Ui> = OnceLock::new();

fn ui() -> &'static Ui {
    UI.get_or_init(|| Ui {
        verbosity: Verbosity::Normal,
        bars: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
    })
}

/// Sets verbosity and colour once, at start-up.
pub fn init(color: ColorChoice, verbosity: Verbosity) {
    match color {
        ColorChoice::Always => {
            console::set_colors_enabled(true);
            console::set_colors_enabled_stderr(true);
        }
        ColorChoice::Never => {
            console::set_colors_enabled(false);
            console::set_colors_enabled_stderr(false);
        }
        ColorChoice::Auto => {
            if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                console::set_colors_enabled(false);
                console::set_colors_enabled_stderr(false);
            }
        }
    }
    let draw = if verbosity == Verbosity::Normal && Term::stderr().is_term() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let _ = UI.set(Ui {
        verbosity,
        bars: MultiProgress::with_draw_target(draw),
    });
}

pub fn verbosity() -> Verbosity {
    ui().verbosity
}

/// Whether cargo and rustc should colour their own output (when we forward it).
pub fn stderr_colors() -> bool {
    console::colors_enabled_stderr()
}

/// Prints a line on stderr above any progress bar. A closed stderr (`cargo sfl 2>&1 | head`)
/// loses the line and nothing else: the run goes on, and its results are saved and reported.
pub fn line(text: &str) {
    let ui = ui();
    if ui.bars.is_hidden() {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{text}");
    } else {
        let _ = ui.bars.println(text);
    }
}

/// A cargo-style status line: a right-aligned green verb, then the message.
pub fn status(verb: &str, message: impl AsRef<str>) {
    if ui().verbosity >= Verbosity::Normal {
        let verb = Style::new().green().bold().for_stderr().apply_to(format!("{verb:>12}"));
        line(&format!("{verb} {}", message.as_ref()));
    }
}

/// A line shown unless `-q`.
pub fn info(message: impl AsRef<str>) {
    if ui().verbosity >= Verbosity::Normal {
        line(message.as_ref());
    }
}

/// Shown only with `-v`.
pub fn detail(message: impl AsRef<str>) {
    if ui().verbosity >= Verbosity::Verbose {
        line(message.as_ref());
    }
}

pub fn warn(message: impl AsRef<str>) {
    let label = Style::new().yellow().bold().for_stderr().apply_to("warning:");
    line(&format!("{label} {}", message.as_ref()));
}

pub fn note(message: impl AsRef<str>) {
    if ui().verbosity >= Verbosity::Normal {
        let label = Style::new().cyan().bold().for_stderr().apply_to("note:");
        line(&format!("{label} {}", message.as_ref()));
    }
}

pub fn error(message: impl AsRef<str>) {
    let label = Style::new().red().bold().for_stderr().apply_to("error:");
    line(&format!("{label} {}", message.as_ref()));
}

/// A spinner with a prefix and a message (hidden unless stderr is a terminal).
pub fn spinner(prefix: &str, message: impl Into<String>) -> ProgressBar {
    let bar = ui().bars.add(ProgressBar::new_spinner());
    bar.set_prefix(prefix.to_string());
    bar.set_style(
        ProgressStyle::with_template("{spinner:.green} {prefix:>10.bold} {msg}")
            .expect("valid template")
            .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "),
    );
    bar.set_message(message.into());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// A bar over `len` items (hidden unless stderr is a terminal).
pub fn bar(prefix: &str, len: u64) -> ProgressBar {
    let bar = ui().bars.add(ProgressBar::new(len));
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12.green.bold} [{bar:30.cyan/blue}] {pos}/{len} {elapsed} {wide_msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(prefix.to_string());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// How long ago `then` was, in words ("40 s ago", "12 min ago", "3 h ago", "2 days ago").
pub fn ago(then: std::time::SystemTime) -> String {
    let secs = then.elapsed().map_or(0, |d| d.as_secs());
    match secs {
        0..120 => format!("{secs} s ago"),
        120..7200 => format!("{} min ago", secs / 60),
        7200..172_800 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86_400),
    }
}

/// The first `shown` of `items` joined by `, `, and how many more: `a, b and 3 more`.
pub fn shortened(items: &[String], shown: usize) -> String {
    let head = items.iter().take(shown).cloned().collect::<Vec<_>>().join(", ");
    match items.len() {
        n if n > shown => format!("{head} and {} more", n - shown),
        _ => head,
    }
}

/// `n` and the noun agreeing with it: `counted(1, "entry", "entries")` is `1 entry`.
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
