//! Static bearer tokens from kube's `--token-auth-file`: a CSV of
//! `token,user,uid,"group1,group2"`, presented as `Authorization: Bearer <token>`.

use super::{AuthConfigError, AuthError, UserInfo};
use http::HeaderMap;
use std::collections::HashMap;
use std::path::Path;

/// The tokens of a token file.
#[derive(Debug, Default)]
pub struct TokenFile {
    users: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Read a token file; kube's start-up errors for a malformed one.
    pub fn load(path: &Path) -> Result<TokenFile, AuthConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| AuthConfigError::Read(e).in_file(path))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parse the CSV text of a token file named `name` (in messages).
    pub fn parse(text: &str, name: &str) -> Result<TokenFile, AuthConfigError> {
        let mut users = HashMap::new();
        for (i, record) in csv_records(text)?.into_iter().enumerate() {
            let number = i + 1;
            if record.first().is_none_or(String::is_empty) {
                tracing::warn!(
                    "empty token has been found in token file '{name}', record number '{number}'"
                );
                continue;
            }
            if record.len() < 3 {
                return Err(AuthConfigError::TokenColumns {
                    name: name.to_string(),
                    found: record.len(),
                });
            }
            let groups = match record.get(3) {
                Some(g) => g.split(',').map(str::to_string).collect(),
                None => Vec::new(),
            };
            let user = UserInfo {
                username: record[1].clone(),
                uid: record[2].clone(),
                groups,
                ..Default::default()
            };
            if users.insert(record[0].clone(), user).is_some() {
                tracing::warn!("duplicate token has been found in token file '{name}', record number '{number}'");
            }
        }
        Ok(TokenFile { users })
    }

    /// The user of `token`, if the file has it.
    pub fn user(&self, token: &str) -> Option<&UserInfo> {
        self.users.get(token)
    }

    /// `Ok(None)` without a bearer token; `Err` for a token the file does not know
    /// (kube's bearer-token authenticator: "invalid bearer token").
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Option<UserInfo>, AuthError> {
        let Some(token) = bearer_token(headers) else {
            return Ok(None);
        };
        match self.users.get(token) {
            Some(user) => Ok(Some(user.clone())),
            None => Err(AuthError::InvalidBearerToken),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header, as kube splits it: the
/// scheme is case-insensitive and the token is the second space-separated part.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    // kube splits the value in at most three at spaces: the scheme, then the token. A
    // byte search: every request with a token passes here, and `str::splitn` costs
    // more than the token's few dozen bytes.
    let space = |s: &str| s.bytes().position(|b| b == b' ');
    let after_scheme = space(value)?;
    let (scheme, rest) = (&value[..after_scheme], &value[after_scheme + 1..]);
    let token = &rest[..space(rest).unwrap_or(rest.len())];
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Records of CSV text as Go's `encoding/csv` reads them: quoted fields may hold
/// commas, `""` and line breaks; blank lines are skipped; records may differ in length.
fn csv_records(text: &str) -> Result<Vec<Vec<String>>, AuthConfigError> {
    let mut records = Vec::new();
    let mut record: Vec<String> = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_field_start => {
                at_field_start = false;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(ch) => {
                            if ch == '\n' {
                                line += 1;
                            }
                            field.push(ch);
                        }
                        None => return Err(AuthConfigError::Quote { line, at_end: true }),
                    }
                }
                if !matches!(chars.peek(), None | Some(',') | Some('\n') | Some('\r')) {
                    return Err(AuthConfigError::Quote {
                        line,
                        at_end: false,
                    });
                }
            }
            ',' => {
                record.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                line += 1;
                if !(record.is_empty() && field.is_empty() && at_field_start) {
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                }
                at_field_start = true;
            }
            c => {
                at_field_start = false;
                field.push(c);
            }
        }
    }
    if !(record.is_empty() && field.is_empty() && at_field_start) {
        record.push(field);
        records.push(record);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, auth.parse().unwrap());
        h
    }

    #[test]
    fn bearer_tokens_split_as_kube_splits_them() {
        for (value, want) in [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER abc def", Some("abc")),
            ("Bearer abc ", Some("abc")),
            ("Bearer  abc", None),
            ("Bearer ", None),
            ("Bearer", None),
            ("Bearerabc", None),
            ("Basic abc", None),
            (" Bearer abc", None),
            ("Bearer\tabc", None),
        ] {
            assert_eq!(bearer_token(&headers(value)), want, "{value:?}");
        }
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn kube_token_file_with_quoted_groups() {
        let file = TokenFile::parse(
            "abc123,alice,uid-1,\"dev,ops\"\n\ndef456,bob,uid-2\n",
            "tokens.csv",
        )
        .unwrap();
        let alice = file
            .authenticate(&headers("Bearer abc123"))
            .unwrap()
            .unwrap();
        assert_eq!(alice.username, "alice");
        assert_eq!(alice.uid, "uid-1");
        assert_eq!(alice.groups, ["dev", "ops"]);
        let bob = file
            .authenticate(&headers("bearer def456"))
            .unwrap()
            .unwrap();
        assert!(bob.groups.is_empty());
        assert_eq!(
            file.authenticate(&headers("Bearer nope"))
                .map_err(|e| e.to_string()),
            Err("invalid bearer token".to_string())
        );
        assert!(matches!(
            file.authenticate(&headers("Basic abc123")),
            Ok(None)
        ));
        assert!(matches!(file.authenticate(&HeaderMap::new()), Ok(None)));
    }

    #[test]
    fn too_few_columns_is_kubes_start_up_error() {
        assert_eq!(
            TokenFile::parse("abc,alice\n", "t.csv")
                .unwrap_err()
                .to_string(),
            "token file 't.csv' must have at least 3 columns (token, user name, user uid), found 2"
        );
    }

    #[test]
    fn unclosed_quotes_are_gos_csv_errors() {
        let err = |text: &str| TokenFile::parse(text, "t.csv").unwrap_err().to_string();
        assert_eq!(
            err("\"abc"),
            "record on line 1: extraneous or missing \" in quoted-field"
        );
        assert_eq!(
            err("a,b,c\n\"a\"b,c"),
            "parse error on line 2: extraneous or missing \" in quoted-field"
        );
    }

    #[test]
    fn csv_quotes_and_line_breaks() {
        assert_eq!(
            csv_records("a,\"b \"\"q\"\"\",c\r\n\"x\ny\",z").unwrap(),
            vec![vec!["a", "b \"q\"", "c"], vec!["x\ny", "z"]]
        );
    }
}
