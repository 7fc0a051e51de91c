//! kube-apiserver's command line, without IO: the flag table read from kube's own
//! `--help` text (`data/kube-v1.36/kube-apiserver-help.txt`) and the classification of
//! an argv the way kube's flag parser (spf13/pflag under cobra) reads it.
//!
//! The server's `main` hands the argv and the names of the flags it implements with
//! clap; [`classify`] answers: print kube's help, print the version, fail with kube's
//! message, or run with the argv clap should parse and the kube flags accepted but
//! ignored here.

use crate::field::go_quote;
use std::collections::BTreeMap;

/// kube-apiserver v1.36's `--help` output, recorded from the real binary.
pub const KUBE_APISERVER_HELP: &str = include_str!("../data/kube-v1.36/kube-apiserver-help.txt");

/// The version `--version` reports (the kube release the data was recorded from).
pub const KUBE_VERSION: &str = "v1.36.2";

/// One flag of kube-apiserver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubeFlag {
    /// The long name, without `--`.
    pub name: String,
    /// The one-letter form (`-v`, `-h`), if any.
    pub shorthand: Option<char>,
    /// The type word `--help` prints (`string`, `strings`, `duration`, ...); `bool` for
    /// flags printed without one.
    pub type_word: String,
    /// The value a bare `--name` stands for (`true` for booleans and `--version`).
    pub no_value_default: Option<String>,
    /// The section of `--help` the flag is listed in (`Generic`, `Etcd`, ...).
    pub section: String,
}

impl KubeFlag {
    /// Repeated occurrences accumulate (lists and maps); otherwise the last one wins.
    pub fn is_list(&self) -> bool {
        matches!(
            self.type_word.as_str(),
            "strings"
                | "stringArray"
                | "int32Slice"
                | "mapStringString"
                | "stringToString"
                | "colonSeparatedMultimapStringString"
                | "namedCertKey"
                | "pattern=N,..."
        )
    }

    /// How the flag is named in kube's error messages: `-v, --v` or `--name`.
    fn display_name(&self) -> String {
        match self.shorthand {
            Some(c) => format!("-{c}, --{}", self.name),
            None => format!("--{}", self.name),
        }
    }
}

/// Every flag of kube-apiserver, by long name.
#[derive(Clone, Debug)]
pub struct FlagTable {
    flags: BTreeMap<String, KubeFlag>,
}

impl FlagTable {
    /// The table of kube-apiserver v1.36 (from [`KUBE_APISERVER_HELP`]).
    pub fn kube_apiserver() -> FlagTable {
        FlagTable::from_help(KUBE_APISERVER_HELP)
    }

    /// Reads the flag lines of a pflag `--help` text: `  -x, --name type   usage` or
    /// `      --name type   usage`; a flag printed without a type word is a boolean
    /// (the type word is separated from the name by one space, the usage by three or
    /// more).
    pub fn from_help(help: &str) -> FlagTable {
        let mut flags = BTreeMap::new();
        let mut section = String::new();
        for line in help.lines() {
            if let Some(title) = line.strip_suffix(" flags:") {
                if !line.starts_with(' ') {
                    section = title.to_string();
                    continue;
                }
            }
            let (shorthand, rest) = if let Some(rest) = line.strip_prefix("      --") {
                (None, rest)
            } else if let Some(rest) = line.strip_prefix("  -") {
                let mut chars = rest.chars();
                match (chars.next(), chars.as_str().strip_prefix(", --")) {
                    (Some(c), Some(rest)) => (Some(c), rest),
                    _ => continue,
                }
            } else {
                continue;
            };
            let name_end = rest.find(' ').unwrap_or(rest.len());
            let name = &rest[..name_end];
            let after = &rest[name_end..];
            let typed = after.starts_with(' ') && !after.starts_with("  ");
            let (type_word, no_value_default) = if typed {
                let word = after[1..].split(' ').next().unwrap_or_default();
                match word.split_once("[=") {
                    Some((word, default)) => (
                        word.to_string(),
                        Some(default.trim_end_matches(']').to_string()),
                    ),
                    None => (word.to_string(), None),
                }
            } else {
                ("bool".to_string(), Some("true".to_string()))
            };
            flags.insert(
                name.to_string(),
                KubeFlag {
                    name: name.to_string(),
                    shorthand,
                    type_word,
                    no_value_default,
                    section: section.clone(),
                },
            );
        }
        FlagTable { flags }
    }

    /// The flag named `name` (long name, without `--`).
    pub fn get(&self, name: &str) -> Option<&KubeFlag> {
        self.flags.get(name)
    }

    /// The flag whose one-letter form is `c`.
    pub fn by_shorthand(&self, c: char) -> Option<&KubeFlag> {
        self.flags.values().find(|f| f.shorthand == Some(c))
    }

    /// Every flag, by name.
    pub fn iter(&self) -> impl Iterator<Item = &KubeFlag> {
        self.flags.values()
    }

    /// How many flags.
    pub fn len(&self) -> usize {
        self.flags.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }
}

/// A flag the server implements itself (with clap): kube's flags it honours and its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnFlag {
    /// The long name, without `--`.
    pub name: String,
    /// Whether `--name VALUE` consumes the next argument.
    pub takes_value: bool,
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// `--help`/`-h`: print kube's help and exit 0.
    Help,
    /// `--version`: print `Kubernetes v1.36.2` and exit 0.
    Version,
    /// `--version=raw`: print the version record and exit 0.
    VersionRaw,
    /// Start the server.
    Run(Run),
}

/// The command line of a start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// The arguments for clap: the server's own flags as given, kube's honoured flags as
    /// `--name=value` (booleans normalised to `true`/`false`; for a scalar flag given
    /// twice only the last occurrence, as kube keeps the last).
    pub forwarded: Vec<String>,
    /// kube's flags given but not implemented here, by name, each once, in order.
    pub ignored: Vec<String>,
}

/// Why kube-apiserver would refuse the command line; `Display` is kube's text (after
/// its `Error: ` prefix).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandLineError {
    /// A long flag no one knows.
    #[error("unknown flag: --{0}")]
    UnknownFlag(String),
    /// A one-letter flag no one knows.
    #[error("unknown shorthand flag: '{letter}' in -{group}")]
    UnknownShorthand {
        /// The unknown letter.
        letter: char,
        /// The argument it was found in, without its `-`.
        group: String,
    },
    /// `---x`, `--=x`.
    #[error("bad flag syntax: {0}")]
    BadSyntax(String),
    /// A flag that takes a value was last on the line.
    #[error("flag needs an argument: {0}")]
    NeedsArgument(String),
    /// A value kube's flag type rejects.
    #[error("invalid argument {} for {} flag: {reason}", go_quote(.value), go_quote(.flag))]
    InvalidArgument {
        /// The flag as kube names it (`--secure-port`, `-v, --v`).
        flag: String,
        /// The value given.
        value: String,
        /// The type's parse error (`strconv.ParseInt: parsing "abc": invalid syntax`).
        reason: String,
    },
    /// Positional arguments.
    #[error("\"kube-apiserver\" does not take any arguments, got [{}]", .0.iter().map(|a| go_quote(a)).collect::<Vec<_>>().join(" "))]
    Positional(Vec<String>),
}

/// Reads `args` (without the program name) as kube-apiserver does, with `own` the flags
/// the server implements (clap's), kube's or not.
pub fn classify(
    args: &[String],
    table: &FlagTable,
    own: &[OwnFlag],
) -> Result<Invocation, CommandLineError> {
    let own_takes_value = |name: &str| own.iter().find(|f| f.name == name).map(|f| f.takes_value);
    let mut help = false;
    let mut version: Option<String> = None;
    let mut positional = Vec::new();
    let mut ignored: Vec<String> = Vec::new();
    // Honoured kube flags: (name, value) in order; scalars keep their last value.
    let mut honoured: Vec<(String, String)> = Vec::new();
    let mut forwarded_own: Vec<String> = Vec::new();
    let mut kube_value = |flag: &KubeFlag, value: String| -> Result<(), CommandLineError> {
        let value = check_value(flag, &value)?;
        match flag.name.as_str() {
            "help" => help = value == "true",
            "version" => version = Some(value),
            _ if own_takes_value(&flag.name).is_some() => {
                if !flag.is_list() {
                    honoured.retain(|(n, _)| n != &flag.name);
                }
                honoured.push((flag.name.clone(), value));
            }
            _ => {
                if !ignored.contains(&flag.name) {
                    ignored.push(flag.name.clone());
                }
            }
        }
        Ok(())
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if long.starts_with('-') || long.starts_with('=') {
                return Err(CommandLineError::BadSyntax(arg.clone()));
            }
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            if let Some(flag) = table.get(name) {
                let value = match (inline, &flag.no_value_default) {
                    (Some(v), _) => v,
                    (None, Some(d)) => d.clone(),
                    (None, None) => match args.get(i) {
                        Some(v) => {
                            i += 1;
                            v.clone()
                        }
                        None => return Err(CommandLineError::NeedsArgument(arg.clone())),
                    },
                };
                kube_value(flag, value)?;
            } else if let Some(takes_value) = own_takes_value(name) {
                forwarded_own.push(arg.clone());
                if takes_value && inline.is_none() {
                    if let Some(v) = args.get(i) {
                        forwarded_own.push(v.clone());
                        i += 1;
                    }
                }
            } else {
                return Err(CommandLineError::UnknownFlag(name.to_string()));
            }
        } else if let Some(group) = arg.strip_prefix('-').filter(|g| !g.is_empty()) {
            // One-letter flags: `-h`, `-v3`, `-v=3`, `-v 3`.
            let mut rest = group;
            while let Some(c) = rest.chars().next() {
                rest = &rest[c.len_utf8()..];
                let Some(flag) = table.by_shorthand(c) else {
                    return Err(CommandLineError::UnknownShorthand {
                        letter: c,
                        group: group.to_string(),
                    });
                };
                let value = if let Some(v) = rest.strip_prefix('=') {
                    let v = v.to_string();
                    rest = "";
                    v
                } else if let Some(d) = &flag.no_value_default {
                    d.clone()
                } else if !rest.is_empty() {
                    let v = rest.to_string();
                    rest = "";
                    v
                } else if let Some(v) = args.get(i) {
                    i += 1;
                    v.clone()
                } else {
                    return Err(CommandLineError::NeedsArgument(format!(
                        "'{c}' in -{group}"
                    )));
                };
                kube_value(flag, value)?;
            }
        } else {
            positional.push(arg.clone());
        }
    }
    if help {
        return Ok(Invocation::Help);
    }
    if !positional.is_empty() {
        return Err(CommandLineError::Positional(positional));
    }
    match version.as_deref() {
        Some("raw") => return Ok(Invocation::VersionRaw),
        Some("true") => return Ok(Invocation::Version),
        _ => {}
    }
    let mut forwarded = forwarded_own;
    forwarded.extend(honoured.into_iter().map(|(n, v)| format!("--{n}={v}")));
    Ok(Invocation::Run(Run { forwarded, ignored }))
}

/// Checks `value` as kube's flag type parses it; returns it (booleans normalised).
fn check_value(flag: &KubeFlag, value: &str) -> Result<String, CommandLineError> {
    let invalid = |reason: String| CommandLineError::InvalidArgument {
        flag: flag.display_name(),
        value: value.to_string(),
        reason,
    };
    match flag.type_word.as_str() {
        "bool" => parse_bool(value)
            .map(|b| b.to_string())
            .ok_or_else(|| invalid(strconv_error("ParseBool", value, "invalid syntax"))),
        "version" => match value {
            "raw" => Ok(value.to_string()),
            v if v.starts_with('v') => Ok(v.to_string()),
            v => parse_bool(v)
                .map(|b| b.to_string())
                .ok_or_else(|| invalid(strconv_error("ParseBool", value, "invalid syntax"))),
        },
        "int" => parse_go_int(value)
            .map(|_| value.to_string())
            .map_err(|why| invalid(strconv_error("ParseInt", value, why))),
        "Level" => match value.parse::<u32>() {
            Ok(_) if value.bytes().all(|b| b.is_ascii_digit()) => Ok(value.to_string()),
            Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(invalid(
                strconv_error("ParseUint", value, "value out of range"),
            )),
            _ => Err(invalid(strconv_error("ParseUint", value, "invalid syntax"))),
        },
        "float" | "float32" => match value.parse::<f64>() {
            Ok(_) if !value.contains(['i', 'I', 'n', 'N']) || is_go_float_word(value) => {
                Ok(value.to_string())
            }
            _ => Err(invalid(strconv_error(
                "ParseFloat",
                value,
                "invalid syntax",
            ))),
        },
        "duration" => {
            go_duration_error(value).map_or(Ok(value.to_string()), |reason| Err(invalid(reason)))
        }
        "ip" => {
            if value.is_empty() || value.trim().parse::<std::net::IpAddr>().is_ok() {
                Ok(value.to_string())
            } else {
                Err(invalid(format!("failed to parse IP: {}", go_quote(value))))
            }
        }
        _ => Ok(value.to_string()),
    }
}

pub(crate) fn strconv_error(func: &str, value: &str, why: &str) -> String {
    format!("strconv.{func}: parsing {}: {why}", go_quote(value))
}

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn is_go_float_word(s: &str) -> bool {
    let s = s.trim_start_matches(['+', '-']).to_ascii_lowercase();
    matches!(s.as_str(), "inf" | "infinity" | "nan")
}

/// Go's `strconv.ParseInt(s, 0, 64)`: the error's reason, if any.
fn parse_go_int(s: &str) -> Result<i64, &'static str> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(b) = lower.strip_prefix("0x") {
        (16, b.to_string())
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b.to_string())
    } else if let Some(b) = lower.strip_prefix("0o") {
        (8, b.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower.clone())
    };
    let body = if radix != 10 || body.contains('_') {
        // Underscores are allowed only with a base prefix, between digits.
        if body.starts_with('_') || body.ends_with('_') || body.contains("__") {
            return Err("invalid syntax");
        }
        if radix == 10 {
            return Err("invalid syntax");
        }
        body.replace('_', "")
    } else {
        body
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return Err("invalid syntax");
    }
    let magnitude = u64::from_str_radix(&body, radix).map_err(|_| "value out of range")?;
    if neg {
        if magnitude > 1 << 63 {
            return Err("value out of range");
        }
        Ok((magnitude as i64).wrapping_neg())
    } else {
        i64::try_from(magnitude).map_err(|_| "value out of range")
    }
}

/// Go's `time.ParseDuration`: its error text, if `s` is not a duration.
fn go_duration_error(s: &str) -> Option<String> {
    if crate::duration::go_parse_duration(s).is_some() {
        return None;
    }
    let invalid = Some(format!("time: invalid duration {}", go_quote(s)));
    let mut rest = s.strip_prefix(['-', '+']).unwrap_or(s);
    if rest == "0" {
        return None;
    }
    if rest.is_empty() {
        return invalid;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." {
            return invalid;
        }
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        if unit.is_empty() {
            return Some(format!("time: missing unit in duration {}", go_quote(s)));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Some(format!(
                "time: unknown unit {} in duration {}",
                go_quote(unit),
                go_quote(s)
            ));
        }
        rest = &rest[unit_end..];
    }
    invalid
}

/// kube's `--version=raw` record for [`KUBE_VERSION`].
pub fn version_raw() -> String {
    format!(
        "version.Info{{Major:\"1\", Minor:\"36\", EmulationMajor:\"1\", EmulationMinor:\"36\", MinCompatibilityMajor:\"1\", MinCompatibilityMinor:\"35\", GitVersion:\"{KUBE_VERSION}\", GitCommit:\"\", GitTreeState:\"\", BuildDate:\"1970-01-01T00:00:00Z\", GoVersion:\"\", Compiler:\"\", Platform:\"{}/{}\"}}",
        go_os(),
        go_arch()
    )
}

fn go_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    }
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        arch => arch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn own() -> Vec<OwnFlag> {
        [
            ("secure-port", true),
            ("bind-address", true),
            ("anonymous-auth", true),
            ("etcd-servers", true),
            ("port", true),
            ("log-pipeline", false),
        ]
        .into_iter()
        .map(|(n, v)| OwnFlag {
            name: n.to_string(),
            takes_value: v,
        })
        .collect()
    }

    fn run(s: &str) -> Result<Invocation, CommandLineError> {
        classify(&args(s), &FlagTable::kube_apiserver(), &own())
    }

    fn err(s: &str) -> String {
        run(s).unwrap_err().to_string()
    }

    #[test]
    fn table_reads_every_flag_of_kubes_help() {
        let table = FlagTable::kube_apiserver();
        let flag_lines = KUBE_APISERVER_HELP
            .lines()
            .filter(|l| l.starts_with("      --") || l.starts_with("  -"))
            .count();
        assert_eq!(table.len(), flag_lines);
        let kind = |n: &str| table.get(n).map(|f| f.type_word.clone()).unwrap();
        assert_eq!(kind("secure-port"), "int");
        assert_eq!(kind("allow-privileged"), "bool");
        assert_eq!(kind("watch-cache"), "bool");
        assert_eq!(kind("request-timeout"), "duration");
        assert_eq!(kind("feature-gates"), "colonSeparatedMultimapStringString");
        assert_eq!(kind("service-account-key-file"), "stringArray");
        assert_eq!(kind("runtime-config"), "mapStringString");
        assert_eq!(kind("advertise-address"), "ip");
        assert_eq!(kind("version"), "version");
        assert_eq!(
            table.get("version").unwrap().no_value_default.as_deref(),
            Some("true")
        );
        assert_eq!(table.get("v").unwrap().shorthand, Some('v'));
        assert_eq!(table.get("help").unwrap().shorthand, Some('h'));
        assert_eq!(table.get("secure-port").unwrap().section, "Secure serving");
        assert!(table.get("service-account-key-file").unwrap().is_list());
        assert!(!table.get("secure-port").unwrap().is_list());
        assert!(table.get("insecure-port").is_none());
    }

    #[test]
    fn both_value_forms_and_booleans() {
        let Ok(Invocation::Run(r)) = run(
            "--secure-port 6443 --bind-address=127.0.0.1 --anonymous-auth --allow-privileged --runtime-config api/all=true --port=0 --log-pipeline --v 4",
        ) else {
            panic!()
        };
        assert_eq!(
            r.forwarded,
            args("--port=0 --log-pipeline --secure-port=6443 --bind-address=127.0.0.1 --anonymous-auth=true")
        );
        assert_eq!(r.ignored, args("allow-privileged runtime-config v"));
    }

    #[test]
    fn scalars_keep_the_last_value_and_booleans_are_normalised() {
        let Ok(Invocation::Run(r)) = run(
            "--secure-port=1 --etcd-servers=a --secure-port=2 --etcd-servers=b --anonymous-auth=F",
        ) else {
            panic!()
        };
        assert_eq!(
            r.forwarded,
            args("--etcd-servers=a --secure-port=2 --etcd-servers=b --anonymous-auth=false")
        );
    }

    // Texts observed from kube-apiserver v1.36 (`/tmp/kube-apiserver ARGS`, stderr
    // after `Error: `, exit code 1).
    #[test]
    fn failures_read_as_kubes() {
        assert_eq!(err("--no-such-flag"), "unknown flag: --no-such-flag");
        assert_eq!(err("--no-such=1"), "unknown flag: --no-such");
        assert_eq!(err("-x"), "unknown shorthand flag: 'x' in -x");
        assert_eq!(err("---x"), "bad flag syntax: ---x");
        assert_eq!(
            err("--secure-port"),
            "flag needs an argument: --secure-port"
        );
        assert_eq!(
            err("--secure-port=abc"),
            "invalid argument \"abc\" for \"--secure-port\" flag: strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            err("--secure-port=99999999999999999999"),
            "invalid argument \"99999999999999999999\" for \"--secure-port\" flag: strconv.ParseInt: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(
            err("--allow-privileged=maybe"),
            "invalid argument \"maybe\" for \"--allow-privileged\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        assert_eq!(
            err("--request-timeout=5"),
            "invalid argument \"5\" for \"--request-timeout\" flag: time: missing unit in duration \"5\""
        );
        assert_eq!(
            err("--request-timeout=5q"),
            "invalid argument \"5q\" for \"--request-timeout\" flag: time: unknown unit \"q\" in duration \"5q\""
        );
        assert_eq!(
            err("--request-timeout=-"),
            "invalid argument \"-\" for \"--request-timeout\" flag: time: invalid duration \"-\""
        );
        assert_eq!(
            err("--bind-address=notip"),
            "invalid argument \"notip\" for \"--bind-address\" flag: failed to parse IP: \"notip\""
        );
        assert_eq!(
            err("--v=-1"),
            "invalid argument \"-1\" for \"-v, --v\" flag: strconv.ParseUint: parsing \"-1\": invalid syntax"
        );
        assert_eq!(
            err("-vx"),
            "invalid argument \"x\" for \"-v, --v\" flag: strconv.ParseUint: parsing \"x\": invalid syntax"
        );
        assert_eq!(
            err("--version=xx"),
            "invalid argument \"xx\" for \"--version\" flag: strconv.ParseBool: parsing \"xx\": invalid syntax"
        );
        assert_eq!(
            err("a b"),
            "\"kube-apiserver\" does not take any arguments, got [\"a\" \"b\"]"
        );
        assert_eq!(
            err("-"),
            "\"kube-apiserver\" does not take any arguments, got [\"-\"]"
        );
        // A parse error wins over --help, whichever comes first.
        assert_eq!(err("--help --no-such"), "unknown flag: --no-such");
        assert_eq!(err("--no-such --help"), "unknown flag: --no-such");
    }

    #[test]
    fn help_and_version() {
        assert_eq!(run("--help"), Ok(Invocation::Help));
        assert_eq!(run("-h"), Ok(Invocation::Help));
        assert_eq!(run("positional --help"), Ok(Invocation::Help));
        assert_eq!(run("--version"), Ok(Invocation::Version));
        assert_eq!(run("--version=raw"), Ok(Invocation::VersionRaw));
        assert!(matches!(run("--version=false"), Ok(Invocation::Run(_))));
        assert!(matches!(run("--"), Ok(Invocation::Run(_))));
        assert!(matches!(run("-v=3 -v4 -v 5"), Ok(Invocation::Run(_))));
    }
}
