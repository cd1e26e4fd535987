//! The compiled schema itself, read back from the exported descriptor set.

use ludus_proto::FILE_DESCRIPTOR_SET;
use ludus_proto::pbjson_types::{DescriptorProto, FileDescriptorProto, FileDescriptorSet};
use ludus_proto::prost::Message as _;

fn file(package: &str) -> FileDescriptorProto {
    let set = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
    set.file
        .into_iter()
        .find(|file| file.package() == package)
        .unwrap_or_else(|| panic!("no file for package {package}"))
}

fn message<'a>(file: &'a FileDescriptorProto, name: &str) -> &'a DescriptorProto {
    file.message_type
        .iter()
        .find(|message| message.name() == name)
        .unwrap_or_else(|| panic!("no message {name}"))
}

/// Messages (map entries included) and enums, counted at every depth.
fn count(messages: &[DescriptorProto]) -> (usize, usize) {
    messages.iter().fold((0, 0), |(m, e), message| {
        let (nested_m, nested_e) = count(&message.nested_type);
        (m + 1 + nested_m, e + message.enum_type.len() + nested_e)
    })
}

#[test]
fn envelope_oneof_has_50_members_numbered_2_to_51() {
    let realtime = file("nakama.realtime");
    let envelope = message(&realtime, "Envelope");
    assert_eq!(envelope.oneof_decl.len(), 1);
    assert_eq!(envelope.oneof_decl[0].name(), "message");
    let members: Vec<i32> = envelope
        .field
        .iter()
        .filter(|field| field.oneof_index == Some(0))
        .map(|field| field.number())
        .collect();
    assert_eq!(members.len(), 50);
    assert_eq!(members, (2..=51).collect::<Vec<_>>());
}

#[test]
fn both_packages_have_every_nakama_message_and_enum() {
    // Nakama's files hold these counts; a message or enum lost while editing
    // the .proto files shows up here.
    let api = file("nakama.api");
    let (api_messages, api_nested_enums) = count(&api.message_type);
    assert_eq!(
        (
            api.message_type.len(),
            api_messages,
            api_nested_enums + api.enum_type.len()
        ),
        (117, 134, 6)
    );
    let realtime = file("nakama.realtime");
    let (realtime_messages, realtime_enums) = count(&realtime.message_type);
    assert_eq!(
        (
            realtime.message_type.len(),
            realtime_messages,
            realtime_enums + realtime.enum_type.len()
        ),
        (51, 60, 2)
    );
}

#[test]
fn gaps_in_field_numbers_are_kept() {
    let api = file("nakama.api");
    let numbers: Vec<(String, i32)> = message(&api, "ListTournamentsRequest")
        .field
        .iter()
        .map(|field| (field.name().to_string(), field.number()))
        .collect();
    assert_eq!(
        numbers,
        [
            ("category_start".to_string(), 1),
            ("category_end".to_string(), 2),
            ("start_time".to_string(), 3),
            ("end_time".to_string(), 4),
            ("limit".to_string(), 6),
            ("cursor".to_string(), 8),
        ]
    );
}
