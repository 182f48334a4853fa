//! `cairn setup claude-code [--project-dir DIR] [--print]`: writes cairn's command hooks into
//! `DIR/.claude/settings.json` and its MCP server into `DIR/.mcp.json`, merged with what is
//! there (see `claude::settings`). With `--print`, shows the merged files and writes nothing.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::Value;

use crate::claude::settings;

#[derive(Args, Debug)]
pub struct SetupArgs {
    #[command(subcommand)]
    pub target: SetupTarget,
}

#[derive(Subcommand, Debug)]
pub enum SetupTarget {
    /// Claude Code: hooks in .claude/settings.json, the MCP server in .mcp.json.
    ClaudeCode {
        /// The project's root directory.
        #[arg(long, default_value = ".")]
        project_dir: PathBuf,
        /// Print the merged files instead of writing them.
        #[arg(long)]
        print: bool,
        /// The hook command Claude Code runs.
        #[arg(long, default_value = "cairn hook claude-code")]
        command: String,
        /// cairn's base URL, for the MCP entry.
        #[arg(
            long = "url",
            env = "CAIRN_URL",
            default_value = "http://127.0.0.1:8420"
        )]
        url: String,
    },
}

pub fn run(args: SetupArgs, out: &mut impl std::io::Write) -> anyhow::Result<i32> {
    let SetupTarget::ClaudeCode {
        project_dir,
        print,
        command,
        url,
    } = args.target;
    let settings_path = project_dir.join(".claude/settings.json");
    let mcp_path = project_dir.join(".mcp.json");
    let merged_settings = settings::merge_settings(read(&settings_path)?, &command)
        .map_err(|e| anyhow::anyhow!("{}: {e}; fix it and run again", settings_path.display()))?;
    let merged_mcp = settings::merge_mcp(read(&mcp_path)?, &url)
        .map_err(|e| anyhow::anyhow!("{}: {e}; fix it and run again", mcp_path.display()))?;
    for (path, value) in [(&settings_path, &merged_settings), (&mcp_path, &merged_mcp)] {
        let text = serde_json::to_string_pretty(value)? + "\n";
        if print {
            writeln!(out, "// {}\n{text}", path.display())?;
        } else {
            write(path, &text)?;
            writeln!(out, "updated {}", path.display())?;
        }
    }
    if !print {
        writeln!(
            out,
            "Claude Code will send its events to cairn; set CAIRN_API_KEY (write scope) and, \
             if cairn is not at {url}, CAIRN_URL in the environment Claude Code starts from."
        )?;
    }
    Ok(0)
}

/// The JSON document at `path`, or `{}` when there is none. Invalid JSON is an error: the
/// file is never overwritten then.
fn read(path: &Path) -> anyhow::Result<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(Value::Object(Default::default())),
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON; it was left as it is", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Default::default())),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Writes through a temporary file and a rename, so a failure never leaves half a file.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.cairn-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}
