//! The body templates the API explorer shows for the client API's calls:
//! each request message with every field filled (strings `"<string>"`,
//! numbers 0, one item in each list and map, nested messages filled too),
//! in protojson with lowerCamelCase names, as Nakama's explorer makes them
//! by reflection. Made from the compiled schema (`FILE_DESCRIPTOR_SET`),
//! once.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::LazyLock;

use ludus_proto::pbjson_types::field_descriptor_proto::{Label, Type};
use ludus_proto::pbjson_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorSet};
use ludus_proto::prost::Message as _;

/// Nested messages deeper than this are written `{}` (no request message
/// nests itself, this only bounds the walk).
const MAX_DEPTH: usize = 8;

/// Every message of the schema by full name (`.nakama.api.Account`).
static MESSAGES: LazyLock<HashMap<String, DescriptorProto>> = LazyLock::new(|| {
    let set = FileDescriptorSet::decode(ludus_proto::FILE_DESCRIPTOR_SET).unwrap_or_default();
    let mut out = HashMap::new();
    fn add(out: &mut HashMap<String, DescriptorProto>, scope: &str, m: &DescriptorProto) {
        let name = format!("{scope}.{}", m.name());
        for nested in &m.nested_type {
            add(out, &name, nested);
        }
        out.insert(name, m.clone());
    }
    for file in &set.file {
        let scope = match file.package() {
            "" => String::new(),
            p => format!(".{p}"),
        };
        for m in &file.message_type {
            add(&mut out, &scope, m);
        }
    }
    out
});

/// The template of `nakama.api.<name>`; empty for `Empty` or a name the
/// schema lacks.
pub(super) fn template(name: &str) -> String {
    match MESSAGES.get(&format!(".nakama.api.{name}")) {
        Some(m) if name != "Empty" => {
            let mut out = String::new();
            write_message(&mut out, m, 0);
            out
        }
        _ => String::new(),
    }
}

fn write_message(out: &mut String, m: &DescriptorProto, depth: usize) {
    out.push('{');
    let mut first = true;
    for f in &m.field {
        // Members of a oneof are left out, as Go's reflection skips them.
        if f.oneof_index.is_some() && !f.proto3_optional() {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "{}:", quoted(&json_name(f)));
        write_field(out, f, depth);
    }
    out.push('}');
}

fn write_field(out: &mut String, f: &FieldDescriptorProto, depth: usize) {
    let entry = (f.r#type() == Type::Message)
        .then(|| MESSAGES.get(f.type_name()))
        .flatten()
        .filter(|m| m.options.as_ref().is_some_and(|o| o.map_entry()));
    if let Some(entry) = entry {
        let key = entry.field.iter().find(|k| k.number() == 1);
        let value = entry.field.iter().find(|v| v.number() == 2);
        out.push('{');
        if let (Some(key), Some(value)) = (key, value) {
            let mut key_text = String::new();
            write_single(&mut key_text, key, depth);
            let key_text = key_text.trim_matches('"').to_owned();
            let _ = write!(out, "{}:", quoted(&key_text));
            write_single(out, value, depth);
        }
        out.push('}');
    } else if f.label() == Label::Repeated {
        out.push('[');
        write_single(out, f, depth);
        out.push(']');
    } else {
        write_single(out, f, depth);
    }
}

/// One value of a field's type.
fn write_single(out: &mut String, f: &FieldDescriptorProto, depth: usize) {
    let text = match f.r#type() {
        Type::String => "\"<string>\"",
        Type::Bool => "false",
        Type::Int64 | Type::Uint64 | Type::Sint64 | Type::Fixed64 | Type::Sfixed64 => "\"0\"",
        Type::Bytes => "\"AA==\"",
        Type::Message => return write_nested(out, f.type_name(), depth),
        _ => "0",
    };
    out.push_str(text);
}

fn write_nested(out: &mut String, type_name: &str, depth: usize) {
    let text = match type_name {
        ".google.protobuf.Timestamp" => "\"1970-01-01T00:00:00Z\"",
        ".google.protobuf.StringValue" => "\"<string>\"",
        ".google.protobuf.BoolValue" => "false",
        ".google.protobuf.Int64Value" | ".google.protobuf.UInt64Value" => "\"0\"",
        ".google.protobuf.BytesValue" => "\"AA==\"",
        ".google.protobuf.Int32Value"
        | ".google.protobuf.UInt32Value"
        | ".google.protobuf.FloatValue"
        | ".google.protobuf.DoubleValue" => "0",
        _ => match MESSAGES.get(type_name) {
            Some(m) if depth < MAX_DEPTH => return write_message(out, m, depth + 1),
            _ => "{}",
        },
    };
    out.push_str(text);
}

/// The field's JSON name, lowerCamelCase as protojson writes by default.
fn json_name(f: &FieldDescriptorProto) -> String {
    if let Some(name) = f.json_name.as_deref().filter(|n| !n.is_empty()) {
        return name.to_owned();
    }
    let mut out = String::new();
    let mut upper = false;
    for c in f.name().chars() {
        match (c, upper) {
            ('_', _) => upper = true,
            (c, true) => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            (c, false) => out.push(c),
        }
    }
    out
}

fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_every_field() {
        let t: serde_json::Value = serde_json::from_str(&template("WriteStorageObjectsRequest"))
            .expect("a template is JSON");
        let object = &t["objects"][0];
        assert_eq!(object["collection"], "<string>");
        assert_eq!(object["permissionRead"], 0);
        let t: serde_json::Value =
            serde_json::from_str(&template("AuthenticateDeviceRequest")).unwrap();
        assert_eq!(
            t["account"]["vars"],
            serde_json::json!({"<string>": "<string>"})
        );
        assert_eq!(t["create"], false);
        assert_eq!(template("Empty"), "");
        assert_eq!(template("NoSuchMessage"), "");
    }
}
