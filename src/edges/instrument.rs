//! Edge instrumentation: the rustc flags that add SanitizerCoverage to the workspace's crates,
//! and the C runtime (`runtime.c`) their constructors call, compiled with the system C
//! compiler and cached in the target directory.

use std::path::{Path, PathBuf};

use crate::error::SflError;

/// The runtime's output file pattern (`%p` = process id), set for each test process.
pub const FILE_ENV: &str = "CARGO_SFL_EDGES_FILE";
/// The file the runtime appends each environment variable a test process reads to.
pub const ENV_READS_ENV: &str = "CARGO_SFL_ENV_READS";
/// Set for the rustc wrapper: the runtime object to link.
pub const RUNTIME_ENV: &str = "CARGO_SFL_EDGES_RUNTIME";
/// Set with [`RUNTIME_ENV`] for a build without edge profiles (`--no-edges`): the runtime is
/// linked only to make the counter updates plain while a test runs on one thread
/// ([`crate::edges::relax`]); no SanitizerCoverage.
pub const LINES_ONLY_ENV: &str = "CARGO_SFL_LINES_ONLY";
/// The recorder's source, compiled on first use.
const RUNTIME_C: &str = include_str!("runtime.c");
/// What a build script or a proc macro of the workspace links instead of the recorder: the
/// SanitizerCoverage callbacks of an instrumented library it links, doing nothing (code that
/// runs while compiling records no edges).
const HOST_C: &str = "#include <stdint.h>\n\
void __sanitizer_cov_bool_flag_init(char *start, char *stop) { (void)start; (void)stop; }\n\
void __sanitizer_cov_pcs_init(const uintptr_t *beg, const uintptr_t *end) { (void)beg; (void)end; }\n\
void __sanitizer_cov_cfs_init(const uintptr_t *beg, const uintptr_t *end) { (void)beg; (void)end; }\n";

/// Added for every instrumented crate that is not a shared library: its executables are linked
/// without position independence. The PC and control-flow tables are mostly addresses, and in
/// a position-independent executable each is a relocation the loader applies at every start,
/// copying every page of the tables: on regex-syntax's test binary 202,578 relocations and
/// ~750 page faults, which made each test process 2.9 ms slower (5.1 ms against 2.2 ms with
/// line coverage alone; 2.0 ms without them).
pub const EXECUTABLE_FLAGS: [&str; 2] = ["-C", "relocation-model=static"];

/// How the runtime is compiled (unwind tables: the panic stacks' walk starts in its own frame).
const CC_FLAGS: [&str; 5] = [
    "-c",
    "-O2",
    "-fPIC",
    "-fno-stack-protector",
    "-fasynchronous-unwind-tables",
];

/// What the cached runtime object is keyed by: its source, how it is compiled (libtest's entry
/// it wraps included) and the flags it is linked with (a change in any must rebuild the
/// instrumented crates, which cargo cannot see).
fn stamp(test_main: Option<&str>, env_iteration: Option<&str>) -> String {
    format!(
        "{RUNTIME_C}\n{HOST_C}\n/* {CC_FLAGS:?} {:?} {:?} {test_main:?} {env_iteration:?} */\n",
        rustc_flags(Path::new("")),
        EXECUTABLE_FLAGS
    )
}

/// rustc flags that add edge instrumentation to a workspace crate (with the runtime at `rt`).
pub fn rustc_flags(rt: &Path) -> Vec<String> {
    let mut flags: Vec<String> = [
        "passes=sancov-module",
        "llvm-args=-sanitizer-coverage-level=3",
        "llvm-args=-sanitizer-coverage-inline-bool-flag",
        "llvm-args=-sanitizer-coverage-pc-table",
        "llvm-args=-sanitizer-coverage-control-flow",
        "llvm-args=-sanitizer-coverage-prune-blocks=1",
    ]
    .iter()
    .flat_map(|f| ["-C".to_string(), (*f).to_string()])
    .collect();
    flags.extend(link_flags(rt));
    flags
}

/// The flags that link the runtime `rt`.
fn link_flags(rt: &Path) -> [String; 2] {
    ["-C".into(), format!("link-arg={}", rt.display())]
}

/// The rustc flags the wrapper adds to a workspace crate with the runtime `rt` linked: with
/// `edges`, SanitizerCoverage and the link; without, the link alone. An executable (not
/// `shared`) is also linked without position independence, which the edge tables need and which
/// gives counter updates the form [`crate::edges::relax`] rewrites.
pub fn wrapper_flags(rt: &Path, edges: bool, shared: bool) -> Vec<String> {
    let mut flags = if edges {
        rustc_flags(rt)
    } else {
        link_flags(rt).to_vec()
    };
    if !shared {
        flags.extend(EXECUTABLE_FLAGS.iter().map(|f| f.to_string()));
    }
    flags
}

/// The callbacks' stub beside the runtime object `rt` ([`HOST_C`]), for build scripts and proc
/// macros.
pub fn host_stub(rt: &Path) -> PathBuf {
    rt.with_file_name("sfl_host.o")
}

/// The directory in `build_dir` that holds the compiled runtime.
pub fn runtime_dir(build_dir: &Path) -> PathBuf {
    build_dir.join("edges-runtime")
}

/// The C defines that make the runtime wrap libtest's entry (`test_main`) and the environment's
/// iterators (`env_iteration`, two names, space-separated).
fn wrapping_defines(test_main: Option<&str>, env_iteration: Option<&str>) -> Vec<String> {
    let mut defines: Vec<String> = test_main
        .map(|s| format!("-DSFL_TEST_MAIN=\"{s}\""))
        .into_iter()
        .collect();
    if let Some((vars, vars_os)) = env_iteration.and_then(|s| s.split_once(' ')) {
        defines.push(format!("-DSFL_ENV_VARS=\"{vars}\""));
        defines.push(format!("-DSFL_ENV_VARS_OS=\"{vars_os}\""));
    }
    defines
}

/// Compiles the runtime into `build_dir` unless the same source is already there; returns the
/// object. With `test_main` (libtest's entry, [`crate::edges::harness`]) the runtime wraps it;
/// with `env_iteration` (`std::env::vars` and `vars_os`, space-separated), those.
/// When the runtime changed, binaries linked against the old one are stale but cargo cannot
/// know (the flags are added by our wrapper), so that build is cleaned.
pub fn prepare_runtime(
    build_dir: &Path,
    test_main: Option<&str>,
    env_iteration: Option<&str>,
) -> Result<PathBuf, SflError> {
    let rt_dir = runtime_dir(build_dir);
    let object = rt_dir.join("sfl_edges.o");
    let stamp = rt_dir.join("source.c");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == self::stamp(test_main, env_iteration)) && object.exists() {
        return Ok(object);
    }
    let setup = |what: String| SflError::Setup(what);
    std::fs::create_dir_all(&rt_dir).map_err(|e| setup(format!("cannot create {}: {e}", rt_dir.display())))?;
    let source = rt_dir.join("sfl_edges.c");
    std::fs::write(&source, RUNTIME_C).map_err(|e| setup(format!("cannot write {}: {e}", source.display())))?;
    let host = rt_dir.join("sfl_host.c");
    std::fs::write(&host, HOST_C).map_err(|e| setup(format!("cannot write {}: {e}", host.display())))?;
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    for (source, object, defines) in [
        (&source, &object, wrapping_defines(test_main, env_iteration)),
        (&host, &host_stub(&object), Vec::new()),
    ] {
        let out = std::process::Command::new(&cc)
            .args(CC_FLAGS)
            .args(defines)
            .arg("-o")
            .arg(object)
            .arg(source)
            .output()
            .map_err(|e| {
                setup(format!(
                    "edge instrumentation needs a C compiler to build its recorder, and `{}` could not run: {e}. \
                     Install one (e.g. `apt install gcc`, which rustc also uses as its linker), set CC, \
                     or pass --no-edges to collect line coverage only",
                    cc.to_string_lossy()
                ))
            })?;
        if !out.status.success() {
            return Err(setup(format!(
                "compiling the edge recorder with `{}` failed:\n{}",
                cc.to_string_lossy(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            )));
        }
    }
    // Binaries linked with an older recorder must be relinked: every profile's directory
    // (`debug`, `release`, a custom profile's, under a target triple's directory too).
    let subdirs = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect()
    };
    for dir in subdirs(build_dir)
        .iter()
        .flat_map(|d| std::iter::once(d.clone()).chain(subdirs(d)))
    {
        if dir.join(".fingerprint").is_dir() {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    std::fs::write(&stamp, self::stamp(test_main, env_iteration))
        .map_err(|e| setup(format!("cannot write {}: {e}", stamp.display())))?;
    Ok(object)
}
