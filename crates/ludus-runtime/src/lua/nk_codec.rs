//! Pure functions of `nk`: JSON, base64/base16, hashes, HMAC, bcrypt, JWT
//! signing and AES. Byte results are Lua strings holding raw bytes, as in
//! Nakama (`hmac_sha256_hash` is raw, `sha256_hash` and `md5_hash` are hex).
//! `jwt_generate` signs HS256 (HMAC-SHA256) or RS256 (RSA PKCS#1 v1.5 with
//! SHA-256, key in PEM: PKCS#8 `PRIVATE KEY` as Nakama reads it, or PKCS#1
//! `RSA PRIVATE KEY`).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use md5::Md5;
use mlua::{Lua, LuaString, Table, Value as LuaValue};
use sha2::{Digest, Sha256};

use super::call_state::{check_memory, unlimited, within_limit};
use super::convert;

/// Most bytes of Lua heap one byte of JSON text becomes, with a margin: the
/// worst case is arrays nested in arrays (`[[[…]]]`, two bytes a level), a
/// table and its one slot for each, 38.8 bytes per byte measured; an empty
/// array as an item (`[],`) is 24 (`tests/runtime/sandbox.rs`).
const JSON_EXPANSION: usize = 64;

/// Highest bcrypt cost `nk.bcrypt_compare` verifies (each step doubles the
/// work; `nk.bcrypt_hash` uses bcrypt's default, 12).
const MAX_BCRYPT_COST: u32 = 14;
pub(super) fn install(lua: &Lua, nk: &Table) -> mlua::Result<()> {
    nk.set(
        "json_encode",
        lua.create_function(|lua, value: LuaValue| {
            // Unguarded (see `call_state::unlimited`): the conversion runs no module
            // code and its text is bounded (`convert::MAX_JSON_BYTES`); the
            // text is then held to the VM's limit.
            let text = unlimited(lua, || -> mlua::Result<_> {
                let text = convert::json_text(lua, &value)
                    .map_err(|e| mlua::Error::runtime(format!("json_encode: {e}")))?;
                lua.create_string(text)
            })?;
            within_limit(lua)?;
            Ok(text)
        })?,
    )?;
    nk.set(
        "json_decode",
        lua.create_function(|lua, text: LuaString| {
            let bytes = text.as_bytes();
            let len = bytes.len();
            let value: serde_json::Value = serde_json::from_slice(&bytes)
                .map_err(|e| mlua::Error::runtime(format!("json_decode: not valid JSON: {e}")))?;
            drop(bytes);
            // Unguarded (see `call_state::unlimited`) when even the largest value
            // this text could make fits under the VM's limit, so the limit
            // holds with no check afterwards; guarded otherwise.
            let most = len.saturating_mul(JSON_EXPANSION).saturating_add(4096);
            if check_memory(lua, most).is_ok() {
                unlimited(lua, || convert::to_lua(lua, &value))
            } else {
                convert::to_lua(lua, &value)
            }
        })?,
    )?;
    nk.set(
        "base64_encode",
        lua.create_function(|_, (input, padding): (LuaString, Option<bool>)| {
            let engine = if padding.unwrap_or(true) {
                &STANDARD
            } else {
                &STANDARD_NO_PAD
            };
            Ok(engine.encode(input.as_bytes()))
        })?,
    )?;
    nk.set(
        "base64_decode",
        lua.create_function(|lua, (input, padding): (LuaString, Option<bool>)| {
            let engine = if padding.unwrap_or(true) {
                &STANDARD
            } else {
                &STANDARD_NO_PAD
            };
            let bytes = engine
                .decode(input.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("not a valid base64 string: {e}")))?;
            lua.create_string(bytes)
        })?,
    )?;
    nk.set(
        "base64url_encode",
        lua.create_function(|_, (input, padding): (LuaString, Option<bool>)| {
            let engine = if padding.unwrap_or(true) {
                &URL_SAFE
            } else {
                &URL_SAFE_NO_PAD
            };
            Ok(engine.encode(input.as_bytes()))
        })?,
    )?;
    nk.set(
        "base64url_decode",
        lua.create_function(|lua, (input, padding): (LuaString, Option<bool>)| {
            let engine = if padding.unwrap_or(false) {
                &URL_SAFE
            } else {
                &URL_SAFE_NO_PAD
            };
            let bytes = engine
                .decode(input.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("not a valid base64 url string: {e}")))?;
            lua.create_string(bytes)
        })?,
    )?;
    nk.set(
        "base16_encode",
        lua.create_function(|_, input: LuaString| Ok(hex(&input.as_bytes())))?,
    )?;
    nk.set(
        "base16_decode",
        lua.create_function(|lua, input: LuaString| {
            let bytes = unhex(&input.as_bytes())
                .ok_or_else(|| mlua::Error::runtime("not a valid base16 string"))?;
            lua.create_string(bytes)
        })?,
    )?;
    nk.set(
        "md5_hash",
        lua.create_function(|_, input: LuaString| Ok(hex(&Md5::digest(&*input.as_bytes()))))?,
    )?;
    nk.set(
        "sha256_hash",
        lua.create_function(|_, input: LuaString| Ok(hex(&Sha256::digest(&*input.as_bytes()))))?,
    )?;
    nk.set(
        "hmac_sha256_hash",
        lua.create_function(|lua, (input, key): (LuaString, LuaString)| {
            if key.as_bytes().is_empty() {
                return Err(mlua::Error::runtime("hmac_sha256_hash: expects a key"));
            }
            let mut mac = Hmac::<Sha256>::new_from_slice(&key.as_bytes())
                .map_err(|e| mlua::Error::runtime(format!("error creating hash: {e}")))?;
            mac.update(&input.as_bytes());
            lua.create_string(mac.finalize().into_bytes())
        })?,
    )?;
    nk.set(
        "bcrypt_hash",
        lua.create_function(|_, input: LuaString| {
            bcrypt::hash(&*input.as_bytes(), bcrypt::DEFAULT_COST)
                .map_err(|e| mlua::Error::runtime(format!("error hashing input: {e}")))
        })?,
    )?;
    nk.set(
        "bcrypt_compare",
        lua.create_function(|_, (hash, plaintext): (String, LuaString)| {
            if hash.is_empty() {
                return Err(mlua::Error::runtime("bcrypt_compare: expects a hash"));
            }
            // The cost comes from the hash: a module-made `$2b$31$…` would
            // hold the VM for hours in code no budget can interrupt.
            let cost = hash.split('$').nth(2).and_then(|c| c.parse::<u32>().ok());
            if cost.is_some_and(|c| c > MAX_BCRYPT_COST) {
                return Err(mlua::Error::runtime(format!(
                    "bcrypt_compare: the hash's cost is above {MAX_BCRYPT_COST}, the most a module may verify"
                )));
            }
            Ok(bcrypt::verify(&*plaintext.as_bytes(), &hash).unwrap_or(false))
        })?,
    )?;
    nk.set(
        "jwt_generate",
        lua.create_function(|lua, (algo, key, claims): (String, String, Table)| {
            jwt_generate(lua, &algo, &key, &claims)
        })?,
    )?;
    for (name, key_len, encrypt) in [
        ("aes128_encrypt", 16, true),
        ("aes128_decrypt", 16, false),
        ("aes256_encrypt", 32, true),
        ("aes256_decrypt", 32, false),
    ] {
        nk.set(
            name,
            lua.create_function(move |lua, (input, key): (LuaString, LuaString)| {
                let input = input.as_bytes();
                let key = key.as_bytes();
                if input.is_empty() {
                    return Err(mlua::Error::runtime(format!("{name}: expects input")));
                }
                if key.len() != key_len {
                    return Err(mlua::Error::runtime(format!(
                        "{name}: expects key {key_len} bytes long"
                    )));
                }
                let out = if encrypt {
                    crate::nk_pure::aes_encrypt(&input, &key)
                } else {
                    crate::nk_pure::aes_decrypt(&input, &key).map_err(mlua::Error::runtime)?
                };
                lua.create_string(out)
            })?,
        )?;
    }
    Ok(())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

fn jwt_generate(lua: &Lua, algo: &str, key: &str, claims: &Table) -> mlua::Result<String> {
    let claims = convert::from_lua(lua, &LuaValue::Table(claims.clone()))?;
    crate::nk_pure::jwt_sign(algo, key, &claims)
        .map_err(|e| mlua::Error::runtime(format!("jwt_generate: {e}")))
}
