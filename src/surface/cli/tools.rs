//! The commands that run a tool, made from the tool table: each tool's command (its group,
//! name, help and examples) and flags (its request's parameters, `args`) come from its
//! entry there, so a tool added to the table is a command with nothing written here.

use std::marker::PhantomData;

use clap::{Arg, ArgMatches, Command};
use serde_json::{Map, Value};

use super::AFTER_PARAMS;
use crate::query::catalog::{self, Shape, Tool};

/// A group of commands that tools can be in (`tmws memory …`), or the top level.
pub(crate) trait Group: Send + Sync + 'static {
    const NAME: Option<&'static str>;
}

macro_rules! group {
    ($ty:ident, $name:expr) => {
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct $ty;
        impl Group for $ty {
            const NAME: Option<&'static str> = $name;
        }
    };
}

group!(Top, None);
group!(Issue, Some("issue"));
group!(Memory, Some("memory"));
group!(Registry, Some("registry"));
group!(Session, Some("session"));
group!(Task, Some("task"));
group!(Trust, Some("trust"));
group!(Review, Some("review"));

/// A tool's command as parsed: the tool, its arguments as text, the parameter read from
/// stdin (if any) and `--format`.
#[derive(Clone)]
pub(crate) struct ToolCommand<G> {
    pub tool: &'static dyn Tool,
    pub args: Map<String, Value>,
    pub stdin: Option<&'static str>,
    pub format: Option<String>,
    /// `--yes`: what the command would ask about is confirmed (see [`catalog::Asks`]).
    pub yes: bool,
    _group: PhantomData<G>,
}

impl<G> std::fmt::Debug for ToolCommand<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCommand").field("tool", &self.tool.spec().name).field("args", &self.args).finish()
    }
}

impl<G: Group> ToolCommand<G> {
    /// The first command of the group with no arguments: what the group's name alone runs
    /// (`tmws review` lists).
    pub(crate) fn first() -> Option<ToolCommand<G>> {
        let (tool, _, _) = in_group::<G>().next()?;
        Some(ToolCommand { tool, args: Map::new(), stdin: None, format: None, yes: false, _group: PhantomData })
    }
}

/// The tools whose commands are in `G`, with their commands and their places in the table.
fn in_group<G: Group>() -> impl Iterator<Item = (&'static dyn Tool, catalog::Command, usize)> {
    catalog::TOOLS
        .iter()
        .enumerate()
        .filter_map(|(place, t)| t.spec().cli.map(|c| (*t, c, place)))
        .filter(|(_, c, _)| c.group == G::NAME)
}

/// The values `--format` takes for a command of this shape.
fn formats(shape: Shape) -> [&'static str; 3] {
    match shape {
        Shape::Text => ["yaml", "json", ""],
        Shape::Table(_) | Shape::Lines(_) => ["table", "yaml", "json"],
    }
}

fn format_help(shape: Shape) -> &'static str {
    match shape {
        Shape::Text => "yaml (the default) or json (also --json).",
        Shape::Table(_) => {
            "table: aligned columns (the default on a terminal); yaml: every field (the default when piped, as \
agents read it); json: for scripts (also --json)."
        }
        Shape::Lines(_) => "table: aligned columns (the default); yaml: every field; json: for scripts (also --json).",
    }
}

/// The command of `tool` without its flags: they are added when the command is parsed or
/// its help shown (`flags`), so that a run makes only its own command's JSON Schema.
fn command(place: usize, tool: &'static dyn Tool, cli: catalog::Command) -> Command {
    let mut cmd = Command::new(cli.name).about(cli.about.trim_end_matches('.')).after_help(cli.examples);
    if let Some(long) = cli.long_about {
        cmd = cmd.long_about(format!("{}\n\n{long}", cli.about));
    }
    match FLAGS.get(place) {
        Some(flags) => cmd.defer(*flags),
        None => with_flags(cmd, tool, cli),
    }
}

/// `cmd` with `tool`'s flags and `--format`.
fn with_flags(cmd: Command, tool: &dyn Tool, cli: catalog::Command) -> Command {
    let values: Vec<&str> = formats(cli.shape).into_iter().filter(|v| !v.is_empty()).collect();
    let format = Arg::new("format")
        .long("format")
        .value_name("FORMAT")
        .value_parser(values)
        .help(format_help(cli.shape))
        .display_order(AFTER_PARAMS);
    let cmd = super::args::build(cmd, tool, cli.optional).arg(format);
    match cli.asks {
        Some(asks) => cmd.arg(
            Arg::new("yes")
                .long("yes")
                .action(clap::ArgAction::SetTrue)
                .help(format!(
                    "Do not ask before --{}: confirm it (for scripts; without a terminal and without --yes, \
nothing is done).",
                    asks.param.replace('_', "-")
                ))
                .display_order(AFTER_PARAMS),
        ),
        None => cmd,
    }
}

/// The flags of the tool at place `I` of the table. `Command::defer` takes a function, not
/// a closure, so there is one for each place.
fn flags_of<const I: usize>(cmd: Command) -> Command {
    match catalog::TOOLS.get(I).and_then(|t| t.spec().cli.map(|c| (*t, c))) {
        Some((tool, cli)) => with_flags(cmd, tool, cli),
        None => cmd,
    }
}

macro_rules! places {
    ($($i:literal)*) => { [$(flags_of::<$i> as fn(Command) -> Command),*] };
}

/// Room for 32 tools; a tool past them gets its flags at once.
const FLAGS: [fn(Command) -> Command; 32] =
    places!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);

impl<G: Group> clap::FromArgMatches for ToolCommand<G> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let Some((name, sub)) = m.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let Some((tool, _, _)) = in_group::<G>().find(|(_, c, _)| c.name == name) else {
            return Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand));
        };
        let (args, stdin) = super::args::parse(sub, tool);
        let format = sub.get_one::<String>("format").cloned();
        let yes = sub.try_get_one::<bool>("yes").ok().flatten().copied().unwrap_or(false);
        Ok(ToolCommand { tool, args, stdin, format, yes, _group: PhantomData })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<G: Group> clap::Subcommand for ToolCommand<G> {
    fn augment_subcommands(mut cmd: Command) -> Command {
        for (tool, cli, place) in in_group::<G>() {
            cmd = cmd.subcommand(command(place, tool, cli));
        }
        cmd
    }

    fn augment_subcommands_for_update(cmd: Command) -> Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        in_group::<G>().any(|(_, c, _)| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::tests::{PING, Ping, root};

    #[test]
    fn a_tool_in_the_table_is_a_command_with_its_flags_help_and_examples() {
        let cli = PING.cli.unwrap();
        assert!(catalog::TOOLS.len() <= FLAGS.len(), "every tool of the table gets its flags when asked");
        let mut cmd = command(FLAGS.len(), &Ping, cli);
        let help = cmd.render_help().to_string();
        assert!(help.contains("Say the word back (ping)"), "{help}");
        assert!(help.contains("--word <WORD>"), "{help}");
        assert!(help.contains("The word to say back."), "{help}");
        assert!(help.contains("Examples:\n  tmws ping --word hi"), "{help}");
        let m = command(FLAGS.len(), &Ping, cli)
            .try_get_matches_from(["ping", "--word", "hi", "--format", "json"])
            .unwrap();
        let (mut args, stdin) = super::super::args::parse(&m, &Ping);
        assert_eq!((Value::Object(args.clone()), stdin), (serde_json::json!({"word": "hi"}), None));
        args.insert("format".into(), Value::from(m.get_one::<String>("format").unwrap().as_str()));
        let (_dir, engine) = root();
        let answered = engine.answer(&engine.session(), &Ping, args).unwrap();
        assert_eq!(answered.text(), "{\n  \"said\": \"hi\",\n  \"root_has_tmws\": true\n}");
        assert!(command(FLAGS.len(), &Ping, cli).try_get_matches_from(["ping"]).is_err(), "--word is required");
    }
}
