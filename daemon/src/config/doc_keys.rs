//! `docs/daemon.md` documents exactly the keys the daemon accepts: the example configuration
//! under "Configuration" against [`Config`], and the first column of the table under "Running
//! behind Curio" against Curio's schema ([`super::curio`]).
//!
//! The accepted keys come from the types themselves: [`accepted_keys`] deserializes a type from
//! a deserializer that records the field names serde's derive hands to `deserialize_struct`
//! (every field, whatever its default; `#[serde(skip)]` fields are not keys), so a field added
//! without a line in the document, or a line without a field, fails here.

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::Config;

const DAEMON_MD: &str = include_str!("../../../docs/daemon.md");

type Error = de::value::Error;

/// Every key `T` accepts, as `section` and `section.key` (nested structs' fields joined by dots).
fn accepted_keys<'de, T: Deserialize<'de>>() -> BTreeSet<String> {
    let keys = RefCell::new(BTreeSet::new());
    T::deserialize(Probe { path: String::new(), keys: &keys }).expect("the probe deserializes every type of the configuration");
    keys.into_inner()
}

/// A deserializer that records the fields of every struct it is asked for and answers every
/// other value with a neutral one (zero, false, empty, none, the first variant).
struct Probe<'a> {
    path: String,
    keys: &'a RefCell<BTreeSet<String>>,
}

impl Probe<'_> {
    fn join(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Error;

    fn deserialize_u8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_u64(0)
    }
    /// Self-describing values (`#[serde(untagged)]`): `engine.devices` reads `"all"`.
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("all")
    }
    fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bool(false)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_f64(0.0)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_f64(0.0)
    }
    fn deserialize_char<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_char('a')
    }
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("")
    }
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("")
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bytes(&[])
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_bytes(&[])
    }
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_none()
    }
    fn deserialize_unit<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, v: V) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_seq(Empty)
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, v: V) -> Result<V::Value, Error> {
        v.visit_seq(Empty)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(self, _: &'static str, _: usize, v: V) -> Result<V::Value, Error> {
        v.visit_seq(Empty)
    }
    fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_map(Empty)
    }
    fn deserialize_struct<V: Visitor<'de>>(self, _: &'static str, fields: &'static [&'static str], v: V) -> Result<V::Value, Error> {
        self.keys.borrow_mut().extend(fields.iter().map(|f| self.join(f)));
        v.visit_map(Fields { probe: self, fields, next: 0 })
    }
    fn deserialize_enum<V: Visitor<'de>>(self, _: &'static str, variants: &'static [&'static str], v: V) -> Result<V::Value, Error> {
        v.visit_enum(variants[0].into_deserializer())
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_str("")
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        v.visit_unit()
    }
}

/// An empty sequence or map.
struct Empty;

impl<'de> SeqAccess<'de> for Empty {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, _: T) -> Result<Option<T::Value>, Error> {
        Ok(None)
    }
}

impl<'de> MapAccess<'de> for Empty {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, _: K) -> Result<Option<K::Value>, Error> {
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, _: V) -> Result<V::Value, Error> {
        Err(de::Error::custom("no value in an empty map"))
    }
}

/// A struct's fields, each once, each value probed under its own path.
struct Fields<'a> {
    probe: Probe<'a>,
    fields: &'static [&'static str],
    next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some(&field) = self.fields.get(self.next) else { return Ok(None) };
        seed.deserialize(field.into_deserializer()).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let field = self.fields[self.next];
        self.next += 1;
        seed.deserialize(Probe { path: self.probe.join(field), keys: self.probe.keys })
    }
}

/// The text of `docs/daemon.md` from the heading `## {title}` to the next `## ` heading.
fn section(title: &str) -> &'static str {
    let start = DAEMON_MD.find(&format!("\n## {title}\n")).unwrap_or_else(|| panic!("docs/daemon.md has no section \"{title}\""));
    let body = &DAEMON_MD[start + title.len() + 5..];
    &body[..body.find("\n## ").unwrap_or(body.len())]
}

/// The example configuration: the first TOML block of "Configuration".
fn example_toml() -> &'static str {
    let text = section("Configuration");
    let start = text.find("```toml\n").expect("\"Configuration\" holds a ```toml block") + "```toml\n".len();
    &text[start..start + text[start..].find("\n```").expect("the TOML block ends")]
}

/// A key at the start of a line (`key = …`), or commented out there (`# key = …`: a key whose
/// default is unset); indented comments continue the line above.
fn key_of(line: &str) -> Option<&str> {
    let line = line.strip_prefix("# ").unwrap_or(line);
    let (key, _) = line.split_once(" =")?;
    (!key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')).then_some(key)
}

/// The keys of the example configuration, as `section` and `section.key`.
fn documented_keys() -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut table = None;
    for line in example_toml().lines() {
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split(']').next().unwrap().to_string();
            keys.insert(name.clone());
            table = Some(name);
        } else if let Some(key) = key_of(line) {
            let table = table.as_ref().unwrap_or_else(|| panic!("docs/daemon.md: {key} comes before any [table]"));
            keys.insert(format!("{table}.{key}"));
        }
    }
    keys
}

/// The example configuration with its commented-out keys set.
fn example_with_every_key() -> String {
    example_toml().lines().map(|l| if key_of(l).is_some() { l.strip_prefix("# ").unwrap_or(l) } else { l }).collect::<Vec<_>>().join("\n")
}

/// The Curio keys in the first column of "Running behind Curio"'s table (`section.*` stands for
/// every key of the section).
fn documented_curio_keys(accepted: &BTreeSet<String>) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for row in section("Running behind Curio").lines().filter(|l| l.starts_with("| ")) {
        let first = row.split('|').nth(1).unwrap();
        for (i, quoted) in first.split('`').enumerate() {
            if i % 2 == 0 || !quoted.contains('.') {
                continue;
            }
            match quoted.strip_suffix(".*") {
                Some(table) => keys.extend(accepted.iter().filter(|k| k.starts_with(&format!("{table}."))).cloned()),
                None => {
                    keys.insert(quoted.to_string());
                }
            }
        }
    }
    keys
}

/// What differs between two key sets, or `None` when they agree.
fn disagreement(documented: &BTreeSet<String>, accepted: &BTreeSet<String>) -> Option<String> {
    let missing: Vec<_> = accepted.difference(documented).collect();
    let extra: Vec<_> = documented.difference(accepted).collect();
    (!missing.is_empty() || !extra.is_empty()).then(|| format!("accepted but not documented: {missing:?}; documented but not accepted: {extra:?}"))
}

#[test]
fn the_documented_configuration_is_the_accepted_one() {
    let documented = documented_keys();
    assert!(documented.contains("engine.devices") && documented.contains("server.socket"), "the example configuration is read wrong: {documented:?}");
    let accepted = accepted_keys::<Config>();
    assert!(accepted.contains("engine.cuda_device") && !accepted.contains("engine.meminfo_path"), "the probe reads the schema wrong: {accepted:?}");
    if let Some(d) = disagreement(&documented, &accepted) {
        panic!("docs/daemon.md, \"Configuration\", and daemon/src/config/mod.rs disagree: {d}");
    }
    // Each documented value, the commented-out ones included, is one the parser takes.
    let text = example_with_every_key();
    let parsed = Config::parse(&text).unwrap_or_else(|e| panic!("the example configuration of docs/daemon.md does not parse: {e}"));
    assert!(parsed.engine.cuda_device.is_some() && parsed.server.tcp.is_some(), "the commented-out keys were not set");
}

#[test]
fn the_documented_curio_keys_are_the_accepted_ones() {
    let accepted: BTreeSet<String> = accepted_keys::<super::curio::CurioConfig>().into_iter().filter(|k| k.contains('.')).collect();
    assert!(accepted.contains("gpus.devices"), "the probe reads Curio's schema wrong: {accepted:?}");
    let documented = documented_curio_keys(&accepted);
    if let Some(d) = disagreement(&documented, &accepted) {
        panic!("docs/daemon.md, \"Running behind Curio\", and daemon/src/config/curio.rs disagree: {d}");
    }
}
