//! The redaction engine against generated secrets and look-alikes, case by case.
//!
//! Secrets come from a table of formats: each format has an id, a generator of its secret
//! and several contexts it is found in (env lines, `.env` files, YAML, JSON, TOML, HCL,
//! source code in several languages, shell commands, URLs and connection strings, HTTP
//! headers, prose), each a template with a `{S}` placeholder (`{SJ}`: the secret's newlines
//! written as `\n`, as in a JSON string). Every secret body is generated at test time by a
//! splitmix64 generator with a fixed seed, so a run is repeatable and no realistic-looking
//! secret is committed as a literal; tokens that carry a checksum (GitHub's `gh*_`, npm's
//! `npm_`) carry a valid CRC-32, JWTs are base64url of real JSON, key blocks are base64 of
//! DER-shaped bytes. Look-alikes are realistic texts that must come back unchanged: digests,
//! ids, public keys and certificates, publishable keys, placeholders and references, prose
//! and configuration that merely name secrets. Decision of this project: a documented
//! example key that calls itself an example (`AKIAIOSFODNN7EXAMPLE`,
//! `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`) is not a secret, so it is a look-alike.
//!
//! Each case is named after its family and the number of its context (`github-pat#2`: the
//! third context of `github-pat`). A secret counts as redacted when the output, its marks
//! left out, holds none of the secret's 8-character windows (a secret shorter than 8
//! characters: when the output does not hold it), so a partial redaction is a miss. A
//! look-alike is a false positive when the output differs from the input at all. The
//! expectation is exact, not a rate: every secret is redacted but the known misses named in
//! [`KNOWN_MISSES`], and every look-alike comes back unchanged but the known false positives
//! named in [`KNOWN_FALSE_POSITIVES`]; a new miss, a new false positive or a fixed one fails
//! and names its case. Every output must also come back unchanged when redacted again and
//! have only marks shaped `[REDACTED:<lowercase-id>]`. Before judging the engine the suite
//! checks itself: every secret is in its text exactly once and no part of it is anywhere
//! else in the text, and no id is in both tables.
//!
//! There are two suites. The first (this file's tables) has the formats the engine was
//! built for. The second ([`second`]) has formats it was not built for, written later from a
//! list of what an attack found missing and from providers' published formats.

mod second;

use std::collections::BTreeSet;

use tmws::redact::redact;

/// The generator's seed: changing it changes every generated body, not the suite's shape.
const SEED: u64 = 0x746d_7773_2d72_6564;

/// Secret cases the engine leaves in its output, in part or whole: none. Fixing one means
/// removing it here; a case missed anew fails with its name.
const KNOWN_MISSES: &[&str] = &[];

/// Look-alike cases the engine changes: none. The same holds as for [`KNOWN_MISSES`].
const KNOWN_FALSE_POSITIVES: &[&str] = &[];

const DIGITS: &str = "0123456789";
const HEX: &str = "0123456789abcdef";
const HEX_UPPER: &str = "0123456789ABCDEF";
const B62: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const UPPER_NUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWER_NUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BASE32_LOWER: &str = "abcdefghijklmnopqrstuvwxyz234567";
const BECH32: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const AZURE_SECRET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_~.-";
const DJANGO: &str = "abcdefghijklmnopqrstuvwxyz0123456789!@#%^&*(-_=+)";
/// WordPress salts: printable ASCII without quotes, backslash and space.
const WP_SALT: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&()*+,-./:;<=>?@[]^_`{|}~";
const PW_CHARS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#%+=@^_~.-";
const URL_PW_CHARS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";
const PW_WORDS: &[&str] =
    &["Summer", "Winter", "Dragon", "Falcon", "Sunshine", "Shadow", "Rainbow", "Harbor", "Maple", "Tiger", "Cactus"];
const PHRASE_WORDS: &[&str] =
    &["correct", "horse", "battery", "staple", "orbit", "velvet", "canyon", "pickle", "lantern", "meadow", "cobalt"];

/// splitmix64: small, fast, and the same sequence on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn range(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    fn chars(&mut self, alphabet: &str, n: usize) -> String {
        let alphabet = alphabet.as_bytes();
        (0..n).map(|_| char::from(alphabet[self.below(alphabet.len())])).collect()
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next().to_le_bytes()[0]).collect()
    }
}

fn encode(bytes: &[u8], alphabet: &str, pad: bool) -> String {
    let alphabet = alphabet.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 with padding.
fn b64(bytes: &[u8]) -> String {
    encode(bytes, B64, true)
}

/// Standard base64 without padding.
fn b64_nopad(bytes: &[u8]) -> String {
    encode(bytes, B64, false)
}

/// base64url without padding (JWTs).
fn b64url(bytes: &[u8]) -> String {
    encode(bytes, B64URL, false)
}

fn wrap(text: &str, width: usize) -> String {
    text.as_bytes().chunks(width).map(|line| std::str::from_utf8(line).expect("ascii")).collect::<Vec<_>>().join("\n")
}

/// A DER-shaped blob: `prefix` then `random` random bytes, base64 in lines of `width`.
fn armored(r: &mut Rng, prefix: &[u8], random: usize, width: usize) -> String {
    let mut der = prefix.to_vec();
    der.extend(r.bytes(random));
    wrap(&b64(&der), width)
}

// ---------------------------------------------------------------------------------------
// Generators of secrets.
// ---------------------------------------------------------------------------------------

/// CRC-32 in base62 (`0-9A-Za-z`), left-padded with `0` to 6 characters.
fn base62_checksum(mut n: u32) -> String {
    let digits = B62.as_bytes();
    let mut out = [b'0'; 6];
    for slot in out.iter_mut().rev() {
        *slot = digits[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out.to_vec()).expect("ascii")
}

/// GitHub's and npm's tokens: prefix, 30 random base62 characters, their CRC-32.
fn checksummed(prefix: &str, r: &mut Rng) -> String {
    let body = r.chars(B62, 30);
    let checksum = base62_checksum(crc32fast::hash(body.as_bytes()));
    format!("{prefix}{body}{checksum}")
}

fn uuid(r: &mut Rng) -> String {
    let h = r.chars(HEX, 32);
    let variant = r.pick(&["8", "9", "a", "b"]);
    format!("{}-{}-4{}-{variant}{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..])
}

/// A password that is safe unquoted in an env file or on a command line.
fn password(r: &mut Rng) -> String {
    match r.below(5) {
        0 => "hunter2".to_owned(),
        1 => {
            let (word, n) = (r.pick(PW_WORDS), r.range(2, 4));
            let digits = r.chars(DIGITS, n);
            let symbol = r.chars("!#%+@^_.", 1);
            format!("{word}{digits}{symbol}")
        }
        2 => (0..4).map(|_| r.pick(PHRASE_WORDS)).collect::<Vec<_>>().join("-"),
        3 => r.chars(PW_CHARS, 16),
        _ => r.chars(B62, 24),
    }
}

/// A password in a quoted string: may hold spaces and `&`.
fn human_password(r: &mut Rng) -> String {
    match r.below(7) {
        0 => "Tr0ub4dor&3".to_owned(),
        1 => "correct horse battery staple".to_owned(),
        2 => (0..4).map(|_| r.pick(PHRASE_WORDS)).collect::<Vec<_>>().join(" "),
        3 => {
            let n = r.range(8, 14);
            format!("{}&{}", r.chars(PW_CHARS, n), r.chars(DIGITS, 2))
        }
        _ => password(r),
    }
}

/// A password that needs no percent-encoding in a URL.
fn url_password(r: &mut Rng) -> String {
    match r.below(4) {
        0 => {
            let (word, n) = (r.pick(PW_WORDS), r.range(3, 5));
            format!("{word}{}", r.chars(DIGITS, n))
        }
        1 => r.chars(URL_PW_CHARS, 20),
        2 => (0..3).map(|_| r.pick(PHRASE_WORDS)).collect::<Vec<_>>().join("-"),
        _ => r.chars(B62, 32),
    }
}

/// `user:password` in base64, as in `Authorization: Basic` and `.npmrc`'s `_auth`.
fn basic_credentials(r: &mut Rng) -> String {
    let user = r.pick(&["ci", "deploy", "admin", "svc-backup", "jenkins", "ops@acme.dev"]);
    let pw = password(r);
    b64(format!("{user}:{pw}").as_bytes())
}

fn jwt(r: &mut Rng) -> String {
    let now = 1_700_000_000 + r.below(50_000_000);
    let (header, signature) = match r.below(3) {
        0 => (r#"{"alg":"HS256","typ":"JWT"}"#.to_owned(), 32),
        1 => (format!(r#"{{"alg":"RS256","kid":"{}","typ":"JWT"}}"#, r.chars(HEX, 16)), 256),
        _ => (r#"{"alg":"ES256","typ":"JWT"}"#.to_owned(), 64),
    };
    let payload = match r.below(3) {
        0 => format!(r#"{{"sub":"{}","name":"Dana Scully","iat":{now},"exp":{}}}"#, r.range(1000, 99_999), now + 3600),
        1 => format!(
            r#"{{"iss":"https://auth.acme.dev/","sub":"auth0|{}","aud":"https://api.acme.dev","iat":{now},"exp":{},"scope":"read:orders write:orders"}}"#,
            r.chars(HEX, 24),
            now + 86_400
        ),
        _ => format!(
            r#"{{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"ci","sub":"system:serviceaccount:ci:deployer","jti":"{}","iat":{now}}}"#,
            uuid(r)
        ),
    };
    let signature = r.bytes(signature);
    format!("{}.{}.{}", b64url(header.as_bytes()), b64url(payload.as_bytes()), b64url(&signature))
}

/// The body of an RSA private key (PKCS#1): `MIIEpAIBAAKCAQEA…`.
fn rsa_key_body(r: &mut Rng) -> String {
    armored(r, &[0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01, 0x01, 0x00], 1180, 64)
}

/// The body of an EC private key (SEC 1, P-256): `MHcCAQEEI…`.
fn ec_key_body(r: &mut Rng) -> String {
    let mut der = vec![0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
    der.extend(r.bytes(32));
    der.extend([
        0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0xa1, 0x44, 0x03, 0x42, 0x00, 0x04,
    ]);
    der.extend(r.bytes(64));
    wrap(&b64(&der), 64)
}

/// The body of an OpenSSH private key (ed25519, unencrypted): `b3BlbnNzaC1rZXktdjEAAAAA…`.
fn openssh_key_body(r: &mut Rng) -> String {
    let mut blob = b"openssh-key-v1\0".to_vec();
    for part in [&b"none"[..], b"none", b""] {
        blob.extend((part.len() as u32).to_be_bytes());
        blob.extend(part);
    }
    blob.extend(1u32.to_be_bytes());
    blob.extend(51u32.to_be_bytes());
    blob.extend(11u32.to_be_bytes());
    blob.extend(b"ssh-ed25519");
    blob.extend(32u32.to_be_bytes());
    blob.extend(r.bytes(32));
    blob.extend(144u32.to_be_bytes());
    blob.extend(r.bytes(144));
    wrap(&b64(&blob), 70)
}

/// The body of a PKCS#8 private key (RSA): `MIIEvgIBADANBgkqhkiG9w0BAQEFAASC…`.
fn pkcs8_key_body(r: &mut Rng) -> String {
    let prefix = [
        0x30, 0x82, 0x04, 0xbe, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01,
        0x01, 0x01, 0x05, 0x00, 0x04, 0x82, 0x04, 0xa8, 0x30, 0x82, 0x04, 0xa4, 0x02, 0x01, 0x00, 0x02, 0x82, 0x01,
        0x01, 0x00,
    ];
    armored(r, &prefix, 1180, 64)
}

/// The body of an OpenPGP secret key block: `lQPGBF…`.
fn pgp_key_body(r: &mut Rng) -> String {
    armored(r, &[0x95, 0x03, 0xc6, 0x04, 0x65], 950, 64)
}

/// kubeconfig's `client-key-data`: a whole PEM RSA key, base64 again.
fn kube_client_key(r: &mut Rng) -> String {
    let pem = format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n", rsa_key_body(r));
    b64(pem.as_bytes())
}

fn sentry_org_token(r: &mut Rng) -> String {
    let payload = format!(
        r#"{{"iat":{}.{:06},"url":"https://sentry.io","region_url":"https://us.sentry.io","org":"acme"}}"#,
        1_700_000_000 + r.below(50_000_000),
        r.below(1_000_000)
    );
    format!("sntrys_{}_{}", b64_nopad(payload.as_bytes()), r.chars(B64, 43))
}

fn grafana_cloud_token(r: &mut Rng) -> String {
    let payload = format!(
        r#"{{"o":"{}","n":"stack-{}-hm-write-{}","k":"{}","m":{{"r":"prod-eu-west-2"}}}}"#,
        r.chars(DIGITS, 6),
        r.chars(DIGITS, 6),
        r.pick(&["alloy", "metrics", "logs"]),
        r.chars(B62, 24)
    );
    format!("glc_{}", b64(payload.as_bytes()))
}

fn onepassword_token(r: &mut Rng) -> String {
    let payload = format!(
        concat!(
            r#"{{"signInAddress":"https://acme.1password.com","userAuth":{{"method":"SRPg-4096","alg":"PBES2g-HS256","#,
            r#""iterations":650000,"salt":"{}"}},"email":"{}@1passwordserviceaccounts.com","srpX":"{}","#,
            r#""muk":{{"alg":"A256GCM","ext":false,"k":"{}","key_ops":["decrypt","encrypt"],"kty":"oct","kid":"mp"}},"#,
            r#""secretKey":"A3-{}-{}-{}-{}-{}-{}","throttleSecret":{{"seed":"{}","uuid":"{}"}},"deviceUuid":"{}"}}"#
        ),
        r.chars(B64URL, 22),
        r.chars(BASE32_LOWER, 13),
        r.chars(HEX, 64),
        r.chars(B64URL, 43),
        r.chars(UPPER_NUM, 6),
        r.chars(UPPER_NUM, 6),
        r.chars(UPPER_NUM, 5),
        r.chars(UPPER_NUM, 5),
        r.chars(UPPER_NUM, 5),
        r.chars(UPPER_NUM, 5),
        r.chars(HEX, 64),
        r.chars(UPPER_NUM, 26),
        r.chars(LOWER_NUM, 26)
    );
    format!("ops_{}", b64(payload.as_bytes()))
}

fn mapbox_secret_token(r: &mut Rng) -> String {
    let payload = format!(r#"{{"u":"acme-maps","a":"cl{}"}}"#, r.chars(LOWER_NUM, 23));
    format!("sk.{}.{}", b64url(payload.as_bytes()), r.chars(B64URL, 22))
}

fn discord_bot_token(r: &mut Rng) -> String {
    let id = format!("1{}", r.chars(DIGITS, 18));
    format!("{}.{}.{}", b64url(id.as_bytes()), r.chars(B64URL, 6), r.chars(B64URL, 38))
}

fn azure_sas_signature(r: &mut Rng) -> String {
    let sig = b64(&r.bytes(32));
    sig.replace('+', "%2B").replace('/', "%2F").replace('=', "%3D")
}

fn wordpress_salt(r: &mut Rng) -> String {
    r.chars(WP_SALT, 64)
}

fn secret_hex_key(r: &mut Rng) -> String {
    let n = [32, 64, 64, 128][r.below(4)];
    r.chars(HEX, n)
}

fn random_api_key(r: &mut Rng) -> String {
    match r.below(3) {
        0 => r.chars(HEX, 32),
        1 => r.chars(B62, 40),
        _ => r.chars(B64URL, 48),
    }
}

fn opaque_token(r: &mut Rng) -> String {
    let n = r.range(40, 64);
    r.chars(B64URL, n)
}

// ---------------------------------------------------------------------------------------
// Generators of look-alikes.
// ---------------------------------------------------------------------------------------

fn none(_: &mut Rng) -> String {
    String::new()
}

fn png_base64(r: &mut Rng) -> String {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(r.bytes(240));
    b64(&png)
}

/// An SSH public key blob: length-prefixed `parts`, then a length-prefixed field of `lead`
/// and `random` random bytes (the key itself).
fn ssh_blob(r: &mut Rng, parts: &[&[u8]], lead: &[u8], random: usize) -> String {
    let mut blob = Vec::new();
    for part in parts {
        blob.extend((part.len() as u32).to_be_bytes());
        blob.extend(*part);
    }
    blob.extend(((lead.len() + random) as u32).to_be_bytes());
    blob.extend(lead);
    blob.extend(r.bytes(random));
    b64(&blob)
}

/// `AAAAC3NzaC1lZDI1NTE5AAAAI…`
fn ssh_ed25519_public(r: &mut Rng) -> String {
    ssh_blob(r, &[b"ssh-ed25519"], b"", 32)
}

/// `AAAAB3NzaC1yc2EAAAADAQABAAABgQ…`
fn ssh_rsa_public(r: &mut Rng) -> String {
    ssh_blob(r, &[b"ssh-rsa", b"\x01\x00\x01"], b"\x00", 384)
}

/// `AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB…`
fn ssh_ecdsa_public(r: &mut Rng) -> String {
    ssh_blob(r, &[b"ecdsa-sha2-nistp256", b"nistp256"], b"\x04", 64)
}

fn certificate_body(r: &mut Rng) -> String {
    armored(r, &[0x30, 0x82, 0x03, 0x5a, 0x30, 0x82, 0x02, 0x42, 0xa0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x14], 840, 64)
}

fn public_key_body(r: &mut Rng) -> String {
    let prefix = [
        0x30, 0x82, 0x01, 0x22, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05,
        0x00, 0x03, 0x82, 0x01, 0x0f, 0x00, 0x30, 0x82, 0x01, 0x0a, 0x02, 0x82, 0x01, 0x01, 0x00,
    ];
    armored(r, &prefix, 262, 64)
}

fn ec_public_key_body(r: &mut Rng) -> String {
    let prefix = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
        0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ];
    armored(r, &prefix, 64, 64)
}

fn csr_body(r: &mut Rng) -> String {
    armored(r, &[0x30, 0x82, 0x02, 0x9e, 0x30, 0x82, 0x01, 0x86, 0x02, 0x01, 0x00, 0x30], 640, 64)
}

fn pgp_public_body(r: &mut Rng) -> String {
    armored(r, &[0x99, 0x01, 0x8d, 0x04, 0x65], 390, 64)
}

fn pgp_signature_body(r: &mut Rng) -> String {
    armored(r, &[0x89, 0x02, 0x33, 0x04, 0x00, 0x01, 0x0a, 0x00, 0x1d, 0x16, 0x21, 0x04], 280, 64)
}

fn mapbox_public_token(r: &mut Rng) -> String {
    let payload = format!(r#"{{"u":"acme-maps","a":"cl{}"}}"#, r.chars(LOWER_NUM, 23));
    format!("pk.{}.{}", b64url(payload.as_bytes()), r.chars(B64URL, 22))
}

// ---------------------------------------------------------------------------------------
// The tables.
// ---------------------------------------------------------------------------------------

/// A format (or a kind of look-alike): its id, a generator of the value put at `{S}`, and
/// the contexts it is found in. Every context makes one case.
struct Family {
    id: &'static str,
    make: fn(&mut Rng) -> String,
    contexts: &'static [&'static str],
}

const SECRETS: &[Family] = &[
    Family {
        id: "aws-access-key-id",
        make: |r| format!("AKIA{}", r.chars(BASE32, 16)),
        contexts: &[
            "export AWS_ACCESS_KEY_ID={S}",
            "[default]\naws_access_key_id = {S}\nregion = eu-west-1\n",
            "provider \"aws\" {\n  region     = \"us-east-1\"\n  access_key = \"{S}\"\n}\n",
            "The key {S} was pushed in commit 4e1f0a2; it belongs to the ci-deploy IAM user.",
            r#"s3 = boto3.client("s3", aws_access_key_id="{S}", region_name="us-east-1")"#,
        ],
    },
    Family {
        id: "aws-temporary-access-key-id",
        make: |r| format!("ASIA{}", r.chars(BASE32, 16)),
        contexts: &[
            r#"{"Credentials": {"AccessKeyId": "{S}", "Expiration": "2025-03-01T12:00:00Z"}}"#,
            "AWS_ACCESS_KEY_ID={S}\nAWS_REGION=us-west-2\n",
            "aws configure set aws_access_key_id {S} --profile staging",
        ],
    },
    Family {
        id: "aws-secret-access-key",
        make: |r| r.chars(B64, 40),
        contexts: &[
            "[default]\naws_secret_access_key = {S}\n",
            "export AWS_SECRET_ACCESS_KEY={S}",
            "aws configure set aws_secret_access_key {S}",
            "storage:\n  s3:\n    bucket: acme-backups\n    accessKeyId: ${AWS_ACCESS_KEY_ID}\n    secretAccessKey: {S}\n",
            r#"{"Credentials": {"SecretAccessKey": "{S}", "Expiration": "2025-03-01T12:00:00Z"}}"#,
            r#"creds := credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), "{S}", "")"#,
        ],
    },
    Family {
        id: "aws-session-token",
        make: |r| format!("IQoJb3JpZ2luX2VjE{}", r.chars(B64, 340)),
        contexts: &[
            "export AWS_SESSION_TOKEN={S}",
            "[temp]\naws_session_token = {S}\n",
            r#"{"Credentials": {"SessionToken": "{S}", "Expiration": "2025-03-01T12:00:00Z"}}"#,
        ],
    },
    Family {
        id: "github-pat",
        make: |r| checksummed("ghp_", r),
        contexts: &[
            "export GITHUB_TOKEN={S}",
            "git clone https://{S}@github.com/acme/infra.git",
            r#"curl -H "Authorization: token {S}" https://api.github.com/user/repos"#,
            "the bot's token is {S}, it expires in 30 days",
            r#"client := github.NewClient(nil).WithAuthToken("{S}")"#,
        ],
    },
    Family {
        id: "github-oauth",
        make: |r| checksummed("gho_", r),
        contexts: &[
            "github.com:\n    user: octocat\n    oauth_token: {S}\n    git_protocol: https\n",
            r#"{"access_token":"{S}","token_type":"bearer","scope":"repo,gist"}"#,
            "GH_TOKEN={S} gh pr list --state open",
        ],
    },
    Family {
        id: "github-user-to-server",
        make: |r| checksummed("ghu_", r),
        contexts: &[
            r#"{"access_token": "{S}", "expires_in": 28800, "token_type": "bearer"}"#,
            r#"const octokit = new Octokit({ auth: "{S}" });"#,
            "Authorization: Bearer {S}",
        ],
    },
    Family {
        id: "github-installation",
        make: |r| checksummed("ghs_", r),
        contexts: &[
            "      - run: gh release upload v1.2.0 dist/*\n        env:\n          GH_TOKEN: {S}\n",
            "git push https://x-access-token:{S}@github.com/acme/api.git HEAD:main",
            r#"let token = "{S}";"#,
        ],
    },
    Family {
        id: "github-refresh",
        make: |r| checksummed("ghr_", r),
        contexts: &[
            r#"{"refresh_token": "{S}", "refresh_token_expires_in": 15811200}"#,
            "refresh_token={S}&grant_type=refresh_token&client_id=Iv1.8a61f9b3a7aba766",
            "GITHUB_REFRESH_TOKEN={S}",
        ],
    },
    Family {
        id: "github-fine-grained-pat",
        make: |r| format!("github_pat_11{}{}_{}", r.chars(UPPER_NUM, 7), r.chars(B62, 13), r.chars(B62, 59)),
        contexts: &[
            "export GITHUB_TOKEN={S}",
            "echo {S} | gh auth login --with-token",
            "renovate:\n  platform: github\n  token: {S}\n",
            "New fine-grained token for the docs repo: {S} (read-only contents).",
        ],
    },
    Family {
        id: "gitlab-pat",
        make: |r| format!("glpat-{}", r.chars(B64URL, 20)),
        contexts: &[
            "the deploy token is {S} use it for CI",
            "export GITLAB_TOKEN={S}",
            r#"curl --header "PRIVATE-TOKEN: {S}" "https://gitlab.com/api/v4/projects""#,
            "git remote set-url origin https://oauth2:{S}@gitlab.com/acme/platform.git",
            r#"gl = gitlab.Gitlab("https://gitlab.com", private_token="{S}")"#,
        ],
    },
    Family {
        id: "gitlab-runner-token",
        make: |r| format!("glrt-{}", r.chars(B64URL, 20)),
        contexts: &[
            "gitlab-runner register --non-interactive --url https://gitlab.com --token {S}",
            "[[runners]]\n  name = \"docker-1\"\n  url = \"https://gitlab.com\"\n  token = \"{S}\"\n  executor = \"docker\"\n",
            "RUNNER_TOKEN={S}",
        ],
    },
    Family {
        id: "gitlab-deploy-token",
        make: |r| format!("gldt-{}", r.chars(B64URL, 20)),
        contexts: &[
            "docker login registry.gitlab.com -u gitlab+deploy-token-42 -p {S}",
            "CI_DEPLOY_PASSWORD={S}",
            "helm repo add acme https://gitlab.com/api/v4/projects/42/packages/helm/stable --username deploy --password {S}",
        ],
    },
    Family {
        id: "gitlab-trigger-token",
        make: |r| format!("glptt-{}", r.chars(HEX, 40)),
        contexts: &[
            "curl -X POST --fail -F token={S} -F ref=main https://gitlab.com/api/v4/projects/42/trigger/pipeline",
            "variables:\n  TRIGGER_TOKEN: {S}\n",
            "Use {S} to trigger the nightly pipeline from the scheduler.",
        ],
    },
    Family {
        id: "slack-bot-token",
        make: |r| {
            let (a, b) = (r.range(10, 13), r.range(10, 13));
            format!("xoxb-{}-{}-{}", r.chars(DIGITS, a), r.chars(DIGITS, b), r.chars(B62, 24))
        },
        contexts: &[
            "SLACK_BOT_TOKEN={S}",
            r#"client = WebClient(token="{S}")"#,
            r#"curl -H "Authorization: Bearer {S}" https://slack.com/api/auth.test"#,
            "slack:\n  bot_token: {S}\n  channel: '#deploys'\n",
        ],
    },
    Family {
        id: "slack-user-token",
        make: |r| {
            format!("xoxp-{}-{}-{}-{}", r.chars(DIGITS, 12), r.chars(DIGITS, 12), r.chars(DIGITS, 13), r.chars(HEX, 32))
        },
        contexts: &[
            "export SLACK_USER_TOKEN={S}",
            r#"{"ok": true, "access_token": "{S}", "token_type": "user"}"#,
            "curl -d token={S} -d channel=C024BE91L https://slack.com/api/conversations.history",
        ],
    },
    Family {
        id: "slack-app-token",
        make: |r| format!("xapp-1-A{}-{}-{}", r.chars(UPPER_NUM, 10), r.chars(DIGITS, 13), r.chars(HEX, 64)),
        contexts: &[
            "SLACK_APP_TOKEN={S}",
            r#"const app = new App({ token: process.env.SLACK_BOT_TOKEN, appToken: "{S}", socketMode: true });"#,
            "Socket mode needs the app-level token ({S}) with connections:write.",
        ],
    },
    Family {
        id: "slack-webhook",
        make: |r| r.chars(B62, 24),
        contexts: &[
            "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T04ABCD12EF/B05GHIJ34KL/{S}",
            r#"curl -X POST -H 'Content-type: application/json' --data '{"text":"deploy done"}' https://hooks.slack.com/services/T04ABCD12EF/B06MNOP56QR/{S}"#,
            "notify:\n  slack: https://hooks.slack.com/services/T01XYZ98765/B07STUV78WX/{S}\n",
            r#"requests.post("https://hooks.slack.com/services/T0A1B2C3D4E/B0F5G6H7I8J/{S}", json=payload)"#,
        ],
    },
    Family {
        id: "discord-webhook",
        make: |r| r.chars(B64URL, 68),
        contexts: &[
            "DISCORD_WEBHOOK=https://discord.com/api/webhooks/1187654321098765432/{S}",
            r#"await fetch("https://discordapp.com/api/webhooks/987654321098765432/{S}", { method: "POST", body });"#,
            "alerts go to https://discord.com/api/webhooks/1201234567890123456/{S} (the #ops channel)",
        ],
    },
    Family {
        id: "stripe-live-secret-key",
        make: |r| format!("sk_live_51{}", r.chars(B62, 97)),
        contexts: &[
            "export STRIPE_SECRET_KEY={S}",
            r#"stripe.api_key = "{S}""#,
            r#"const stripe = require("stripe")("{S}");"#,
            "curl https://api.stripe.com/v1/charges -u {S}: -d amount=2000 -d currency=usd",
        ],
    },
    Family {
        id: "stripe-test-secret-key",
        make: |r| format!("sk_test_{}", r.chars(B62, 24)),
        contexts: &[
            "STRIPE_KEY={S}",
            r#"Stripe.apiKey = "{S}";"#,
            "stripe listen --api-key {S} --forward-to localhost:4242/webhook",
        ],
    },
    Family {
        id: "stripe-restricted-key",
        make: |r| format!("rk_live_51{}", r.chars(B62, 97)),
        contexts: &[
            "STRIPE_RESTRICTED_KEY={S}",
            r#"{"stripe": {"restricted_key": "{S}", "account": "acct_1Nx"}}"#,
            r#"sc := client.New("{S}", nil)"#,
        ],
    },
    Family {
        id: "stripe-webhook-secret",
        make: |r| format!("whsec_{}", r.chars(B62, 32)),
        contexts: &[
            "STRIPE_WEBHOOK_SECRET={S}",
            "endpoint_secret = '{S}'",
            "Ready! Your webhook signing secret is {S} (^C to quit)",
        ],
    },
    Family {
        id: "google-api-key",
        make: |r| format!("AIza{}", r.chars(B64URL, 35)),
        contexts: &[
            "GOOGLE_API_KEY={S}",
            r#"<script src="https://maps.googleapis.com/maps/api/js?key={S}&callback=initMap"></script>"#,
            "const firebaseConfig = {\n  apiKey: \"{S}\",\n  authDomain: \"acme-prod.firebaseapp.com\",\n};\n",
            r#"curl "https://generativelanguage.googleapis.com/v1beta/models?key={S}""#,
            r#"genai.configure(api_key="{S}")"#,
        ],
    },
    Family {
        id: "google-oauth-client-secret",
        make: |r| format!("GOCSPX-{}", r.chars(B64URL, 28)),
        contexts: &[
            r#"{"web":{"client_id":"1234567890-abc.apps.googleusercontent.com","client_secret":"{S}","redirect_uris":["http://localhost:8080/callback"]}}"#,
            "GOOGLE_CLIENT_SECRET={S}",
            "oauth:\n  google:\n    client_secret: \"{S}\"\n",
        ],
    },
    Family {
        id: "google-oauth-access-token",
        make: |r| format!("ya29.a0A{}", r.chars(B64URL, 160)),
        contexts: &[
            r#"curl -H "Authorization: Bearer {S}" https://www.googleapis.com/drive/v3/files"#,
            r#"{"access_token": "{S}", "expires_in": 3599, "token_type": "Bearer"}"#,
            "gcloud auth print-access-token gave {S} which expires in an hour",
        ],
    },
    Family {
        id: "google-refresh-token",
        make: |r| format!("1//0{}", r.chars(B64URL, 99)),
        contexts: &[
            r#"{"client_id": "1234567890-abc.apps.googleusercontent.com", "refresh_token": "{S}", "type": "authorized_user"}"#,
            "GOOGLE_REFRESH_TOKEN={S}",
        ],
    },
    Family {
        id: "openai-project-key",
        make: |r| format!("sk-proj-{}T3BlbkFJ{}", r.chars(B64URL, 74), r.chars(B64URL, 74)),
        contexts: &[
            "OPENAI_API_KEY={S}",
            r#"client = OpenAI(api_key="{S}")"#,
            r#"curl https://api.openai.com/v1/models -H "Authorization: Bearer {S}""#,
            r#"const openai = new OpenAI({ apiKey: "{S}" });"#,
            "I pasted my key {S} into the notebook by mistake",
        ],
    },
    Family {
        id: "openai-legacy-key",
        make: |r| format!("sk-{}T3BlbkFJ{}", r.chars(B62, 20), r.chars(B62, 20)),
        contexts: &[
            "export OPENAI_API_KEY={S}",
            r#"openai.api_key = "{S}""#,
            "llm:\n  provider: openai\n  api_key: {S}\n",
        ],
    },
    Family {
        id: "openai-service-account-key",
        make: |r| format!("sk-svcacct-{}T3BlbkFJ{}", r.chars(B64URL, 74), r.chars(B64URL, 74)),
        contexts: &["OPENAI_API_KEY={S}", r#"os.environ.setdefault("OPENAI_API_KEY", "{S}")"#],
    },
    Family {
        id: "anthropic-api-key",
        make: |r| format!("sk-ant-api03-{}AA", r.chars(B64URL, 93)),
        contexts: &[
            "ANTHROPIC_API_KEY={S}",
            r#"client = anthropic.Anthropic(api_key="{S}")"#,
            r#"curl https://api.anthropic.com/v1/messages -H "x-api-key: {S}" -H "anthropic-version: 2023-06-01""#,
            r#"{"env": {"ANTHROPIC_API_KEY": "{S}"}}"#,
            "Here is the key for the eval box: {S} — please don't share it.",
        ],
    },
    Family {
        id: "anthropic-admin-key",
        make: |r| format!("sk-ant-admin01-{}AA", r.chars(B64URL, 93)),
        contexts: &[
            "ANTHROPIC_ADMIN_KEY={S}",
            r#"curl https://api.anthropic.com/v1/organizations/users -H "x-api-key: {S}""#,
        ],
    },
    Family {
        id: "huggingface-token",
        make: |r| format!("hf_{}", r.chars(LETTERS, 34)),
        contexts: &[
            "HF_TOKEN={S}",
            "huggingface-cli login --token {S}",
            "from huggingface_hub import login\nlogin(token=\"{S}\")\n",
            "git clone https://user:{S}@huggingface.co/acme/private-model",
        ],
    },
    Family {
        id: "npm-token",
        make: |r| checksummed("npm_", r),
        contexts: &[
            "//registry.npmjs.org/:_authToken={S}",
            "NPM_TOKEN={S} npm publish --access public",
            "      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: {S}\n",
            "npmRegistryServer: \"https://registry.npmjs.org\"\nnpmAuthToken: \"{S}\"\n",
        ],
    },
    Family {
        id: "npmrc-legacy-auth-token",
        make: uuid,
        contexts: &[
            "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={S}\n",
            "@acme:registry=https://npm.acme.dev/\n//npm.acme.dev/:_authToken={S}\nalways-auth=true\n",
            "npm config set //registry.npmjs.org/:_authToken={S}",
        ],
    },
    Family {
        id: "npmrc-basic-auth",
        make: basic_credentials,
        contexts: &[
            "//artifactory.acme.dev/api/npm/npm-virtual/:_auth={S}\nemail=ci@acme.dev\n",
            "registry=https://nexus.acme.dev/repository/npm/\n_auth = {S}\nalways-auth = true\n",
        ],
    },
    Family {
        id: "pypi-token",
        make: |r| format!("pypi-AgEIcHlwaS5vcmc{}", r.chars(B64URL, 160)),
        contexts: &[
            "[pypi]\n  username = __token__\n  password = {S}\n",
            "TWINE_PASSWORD={S} twine upload dist/*",
            "uv publish --token {S}",
            "      - uses: pypa/gh-action-pypi-publish@release/v1\n        with:\n          password: {S}\n",
        ],
    },
    Family {
        id: "sendgrid-key",
        make: |r| format!("SG.{}.{}", r.chars(B64URL, 22), r.chars(B64URL, 43)),
        contexts: &[
            "SENDGRID_API_KEY={S}",
            r#"sg = SendGridAPIClient("{S}")"#,
            r#"curl --request POST --url https://api.sendgrid.com/v3/mail/send --header "Authorization: Bearer {S}""#,
            "EMAIL_HOST_USER = \"apikey\"\nEMAIL_HOST_PASSWORD = \"{S}\"\n",
        ],
    },
    Family {
        id: "twilio-api-key",
        make: |r| format!("SK{}", r.chars(HEX, 32)),
        contexts: &[
            "TWILIO_API_KEY={S}",
            r#"client = Client("{S}", api_secret, account_sid)"#,
            "twilio:\n  api_key: {S}\n",
        ],
    },
    Family {
        id: "twilio-auth-token",
        make: |r| r.chars(HEX, 32),
        contexts: &[
            "TWILIO_AUTH_TOKEN={S}",
            r#"client = Client(account_sid, "{S}")"#,
            r#"curl -u "$TWILIO_ACCOUNT_SID:{S}" https://api.twilio.com/2010-04-01/Accounts.json"#,
        ],
    },
    Family {
        id: "mailgun-key",
        make: |r| format!("key-{}", r.chars(HEX, 32)),
        contexts: &[
            "MAILGUN_API_KEY={S}",
            "curl -s --user 'api:{S}' https://api.mailgun.net/v3/mg.acme.dev/messages -F to=ops@acme.dev",
            "mailgun:\n  domain: mg.acme.dev\n  secret: {S}\n",
        ],
    },
    Family {
        id: "vault-service-token",
        make: |r| format!("hvs.CAESI{}", r.chars(B64URL, 86)),
        contexts: &[
            "export VAULT_TOKEN={S}",
            "vault login {S}",
            r#"curl -H "X-Vault-Token: {S}" https://vault.acme.dev/v1/secret/data/app"#,
            r#"client = hvac.Client(url="https://vault.acme.dev", token="{S}")"#,
        ],
    },
    Family {
        id: "vault-batch-token",
        make: |r| format!("hvb.AAAAAQ{}", r.chars(B64URL, 140)),
        contexts: &[
            "VAULT_TOKEN={S}",
            r#"{"auth": {"client_token": "{S}", "lease_duration": 3600, "renewable": false}}"#,
        ],
    },
    Family {
        id: "digitalocean-token",
        make: |r| format!("{}{}", r.pick(&["dop_v1_", "dop_v1_", "doo_v1_"]), r.chars(HEX, 64)),
        contexts: &[
            "DIGITALOCEAN_TOKEN={S}",
            "doctl auth init --access-token {S}",
            "provider \"digitalocean\" {\n  token = \"{S}\"\n}\n",
            r#"curl -X GET -H "Authorization: Bearer {S}" "https://api.digitalocean.com/v2/droplets""#,
        ],
    },
    Family {
        id: "shopify-token",
        make: |r| format!("{}{}", r.pick(&["shpat_", "shpca_", "shppa_", "shpss_"]), r.chars(HEX, 32)),
        contexts: &[
            "SHOPIFY_ACCESS_TOKEN={S}",
            r#"curl -H "X-Shopify-Access-Token: {S}" https://acme.myshopify.com/admin/api/2024-04/shop.json"#,
            r#"const session = { shop: "acme.myshopify.com", accessToken: "{S}" };"#,
        ],
    },
    Family {
        id: "atlassian-api-token",
        make: |r| format!("ATATT3xFfGF0{}={}", r.chars(B64URL, 171), r.chars(HEX_UPPER, 8)),
        contexts: &[
            "JIRA_API_TOKEN={S}",
            "curl -u ops@acme.dev:{S} https://acme.atlassian.net/rest/api/3/myself",
            r#"jira = JIRA(server="https://acme.atlassian.net", basic_auth=("ops@acme.dev", "{S}"))"#,
            "confluence:\n  url: https://acme.atlassian.net/wiki\n  token: {S}\n",
        ],
    },
    Family {
        id: "linear-api-key",
        make: |r| format!("lin_api_{}", r.chars(B62, 40)),
        contexts: &[
            "LINEAR_API_KEY={S}",
            r#"const linear = new LinearClient({ apiKey: "{S}" });"#,
            r#"curl https://api.linear.app/graphql -H "Authorization: {S}" -d '{"query":"{ viewer { id } }"}'"#,
        ],
    },
    Family {
        id: "databricks-token",
        make: |r| {
            let suffix = if r.below(2) == 0 { "" } else { "-2" };
            format!("dapi{}{suffix}", r.chars(HEX, 32))
        },
        contexts: &[
            "DATABRICKS_TOKEN={S}",
            "[DEFAULT]\nhost  = https://adb-1234567890123456.7.azuredatabricks.net\ntoken = {S}\n",
            r#"w = WorkspaceClient(host="https://adb-1234567890123456.7.azuredatabricks.net", token="{S}")"#,
        ],
    },
    Family {
        id: "docker-hub-pat",
        make: |r| format!("dckr_pat_{}", r.chars(B64URL, 27)),
        contexts: &[
            "docker login -u acmebot -p {S}",
            "echo {S} | docker login --username acmebot --password-stdin",
            "DOCKERHUB_TOKEN={S}",
        ],
    },
    Family {
        id: "sentry-org-token",
        make: sentry_org_token,
        contexts: &["SENTRY_AUTH_TOKEN={S}", "[auth]\ntoken={S}\n", "sentry-cli --auth-token {S} releases new 1.4.2"],
    },
    Family {
        id: "sentry-user-token",
        make: |r| format!("sntryu_{}", r.chars(HEX, 64)),
        contexts: &["SENTRY_AUTH_TOKEN={S}", "curl -H 'Authorization: Bearer {S}' https://sentry.io/api/0/projects/"],
    },
    Family {
        id: "grafana-service-account-token",
        make: |r| format!("glsa_{}_{}", r.chars(B62, 32), r.chars(HEX, 8)),
        contexts: &[
            "GRAFANA_TOKEN={S}",
            r#"curl -H "Authorization: Bearer {S}" https://grafana.acme.dev/api/dashboards/home"#,
            "provider \"grafana\" {\n  url  = \"https://grafana.acme.dev\"\n  auth = \"{S}\"\n}\n",
        ],
    },
    Family {
        id: "grafana-cloud-token",
        make: grafana_cloud_token,
        contexts: &[
            "GRAFANA_CLOUD_TOKEN={S}",
            "remote_write:\n  - url: https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push\n    basic_auth:\n      username: 1234567\n      password: {S}\n",
            "The Alloy agent authenticates with {S} as its access policy token.",
        ],
    },
    Family {
        id: "new-relic-user-key",
        make: |r| format!("NRAK-{}", r.chars(UPPER_NUM, 27)),
        contexts: &[
            "NEW_RELIC_API_KEY={S}",
            r#"curl -X POST https://api.newrelic.com/graphql -H "API-Key: {S}" -d @query.json"#,
            "provider \"newrelic\" {\n  account_id = 1234567\n  api_key    = \"{S}\"\n}\n",
        ],
    },
    Family {
        id: "new-relic-license-key",
        make: |r| format!("{}NRAL", r.chars(HEX, 36)),
        contexts: &[
            "NEW_RELIC_LICENSE_KEY={S}",
            "common: &default_settings\n  license_key: '{S}'\n  app_name: acme-api\n",
        ],
    },
    Family {
        id: "telegram-bot-token",
        make: |r| {
            let n = r.range(8, 10);
            format!("{}:AA{}", r.chars(DIGITS, n), r.chars(B64URL, 33))
        },
        contexts: &[
            "TELEGRAM_BOT_TOKEN={S}",
            r#"curl "https://api.telegram.org/bot{S}/sendMessage?chat_id=-1001234567&text=done""#,
            r#"bot = telebot.TeleBot("{S}")"#,
            "Use this token to access the HTTP API:\n{S}\nKeep your token secure and store it safely.",
        ],
    },
    Family {
        id: "postman-api-key",
        make: |r| format!("PMAK-{}-{}", r.chars(HEX, 24), r.chars(HEX, 34)),
        contexts: &[
            "POSTMAN_API_KEY={S}",
            r#"curl https://api.getpostman.com/collections -H "X-Api-Key: {S}""#,
            "newman run \"https://api.getpostman.com/collections/123?apikey={S}\"",
        ],
    },
    Family {
        id: "terraform-cloud-token",
        make: |r| format!("{}.atlasv1.{}", r.chars(LOWER_NUM, 14), r.chars(B64URL, 67)),
        contexts: &[
            r#"{"credentials": {"app.terraform.io": {"token": "{S}"}}}"#,
            "credentials \"app.terraform.io\" {\n  token = \"{S}\"\n}\n",
            "export TF_TOKEN_app_terraform_io={S}",
        ],
    },
    Family {
        id: "doppler-token",
        make: |r| format!("{}{}", r.pick(&["dp.pt.", "dp.st.prd.", "dp.sa."]), r.chars(B62, 43)),
        contexts: &[
            "DOPPLER_TOKEN={S}",
            "doppler configure set token {S} --scope /app",
            r#"docker run -e DOPPLER_TOKEN="{S}" acme/api:1.4.2"#,
        ],
    },
    Family {
        id: "planetscale-token",
        make: |r| format!("{}{}", r.pick(&["pscale_pw_", "pscale_pw_", "pscale_tkn_"]), r.chars(B64URL, 43)),
        contexts: &[
            "DATABASE_URL=mysql://3kz9q1x2abcd:{S}@aws.connect.psdb.cloud/acme?sslaccept=strict",
            "PLANETSCALE_PASSWORD={S}",
            "planetscale:\n  username: 3kz9q1x2abcd\n  password: \"{S}\"\n",
        ],
    },
    Family {
        id: "jwt",
        make: jwt,
        contexts: &[
            "Authorization: Bearer {S}",
            "Cookie: session={S}; Path=/; HttpOnly",
            r#"{"id_token": "{S}", "token_type": "Bearer"}"#,
            "JWT={S}",
            "The failing request carried {S} which decodes to user 42.",
            "users:\n- name: ci\n  user:\n    token: {S}\n",
        ],
    },
    Family {
        id: "pem-rsa-private-key",
        make: rsa_key_body,
        contexts: &[
            "-----BEGIN RSA PRIVATE KEY-----\n{S}\n-----END RSA PRIVATE KEY-----\n",
            "tls:\n  key: |\n    -----BEGIN RSA PRIVATE KEY-----\n    {S}\n    -----END RSA PRIVATE KEY-----\n",
            "cat > deploy.pem <<'EOF'\n-----BEGIN RSA PRIVATE KEY-----\n{S}\n-----END RSA PRIVATE KEY-----\nEOF\n",
        ],
    },
    Family {
        id: "pem-ec-private-key",
        make: ec_key_body,
        contexts: &[
            "-----BEGIN EC PRIVATE KEY-----\n{S}\n-----END EC PRIVATE KEY-----",
            "# openssl ecparam -genkey -name prime256v1\n-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n-----BEGIN EC PRIVATE KEY-----\n{S}\n-----END EC PRIVATE KEY-----\n",
            r#"APNS_KEY="-----BEGIN EC PRIVATE KEY-----\n{SJ}\n-----END EC PRIVATE KEY-----""#,
        ],
    },
    Family {
        id: "pem-openssh-private-key",
        make: openssh_key_body,
        contexts: &[
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{S}\n-----END OPENSSH PRIVATE KEY-----\n",
            "$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\n{S}\n-----END OPENSSH PRIVATE KEY-----\n",
            "deploy:\n  ssh_key: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n    {S}\n    -----END OPENSSH PRIVATE KEY-----\n",
        ],
    },
    Family {
        id: "pem-pkcs8-private-key",
        make: pkcs8_key_body,
        contexts: &[
            r#"{"type": "service_account", "project_id": "acme-prod", "private_key": "-----BEGIN PRIVATE KEY-----\n{SJ}\n-----END PRIVATE KEY-----\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}"#,
            "-----BEGIN PRIVATE KEY-----\n{S}\n-----END PRIVATE KEY-----",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{S}\n-----END ENCRYPTED PRIVATE KEY-----\n",
            r#"const KEY: &str = "-----BEGIN PRIVATE KEY-----\n{SJ}\n-----END PRIVATE KEY-----\n";"#,
        ],
    },
    Family {
        id: "pgp-private-key",
        make: pgp_key_body,
        contexts: &[
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{S}\n=Xq9T\n-----END PGP PRIVATE KEY BLOCK-----\n",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: ci signing key\n\n{S}\n=bT4e\n-----END PGP PRIVATE KEY BLOCK-----",
            "signing:\n  gpg_private_key: |\n    -----BEGIN PGP PRIVATE KEY BLOCK-----\n\n    {S}\n    =k2Lw\n    -----END PGP PRIVATE KEY BLOCK-----\n",
        ],
    },
    Family {
        id: "bearer-token",
        make: opaque_token,
        contexts: &[
            r#"curl -H "Authorization: Bearer {S}" https://api.acme.dev/v1/orders"#,
            "GET /v1/orders HTTP/1.1\nHost: api.acme.dev\nAuthorization: Bearer {S}\nAccept: application/json\n",
            r#"headers = {"Authorization": "Bearer {S}", "Accept": "application/json"}"#,
            r#"req.Header.Set("Authorization", "Bearer {S}")"#,
            r#"proxy_set_header Authorization "Bearer {S}";"#,
        ],
    },
    Family {
        id: "basic-auth-header",
        make: basic_credentials,
        contexts: &[
            r#"curl -H "Authorization: Basic {S}" https://registry.acme.dev/v2/_catalog"#,
            "POST /oauth/token HTTP/1.1\nAuthorization: Basic {S}\nContent-Type: application/x-www-form-urlencoded\n",
            "const res = await fetch(url, {\n  headers: {\n    Authorization: \"Basic {S}\",\n  },\n});\n",
            r#"conn.setRequestProperty("Authorization", "Basic {S}");"#,
        ],
    },
    Family {
        id: "postgres-url-password",
        make: url_password,
        contexts: &[
            "DATABASE_URL=postgres://app:{S}@db.internal:5432/app",
            r#"engine = create_engine("postgresql+psycopg2://etl:{S}@10.0.3.14:5432/warehouse")"#,
            "psql postgresql://postgres:{S}@localhost:5432/postgres -c 'select 1'",
            "database:\n  url: postgres://api:{S}@pg.acme.internal:5432/api?sslmode=require\n",
        ],
    },
    Family {
        id: "mysql-url-password",
        make: url_password,
        contexts: &[
            "DATABASE_URL=mysql://root:{S}@127.0.0.1:3306/shop",
            r#"db, err := sql.Open("mysql", "app:{S}@tcp(db:3306)/app?parseTime=true")"#,
            "SQLALCHEMY_DATABASE_URI = \"mysql+pymysql://report:{S}@mysql.internal/reports\"",
        ],
    },
    Family {
        id: "redis-url-password",
        make: url_password,
        contexts: &[
            "REDIS_URL=redis://:{S}@cache.internal:6379/0",
            "CACHE_URL=rediss://default:{S}@redis-12345.c1.us-east-1-2.ec2.cloud.redislabs.com:12345",
            r#"r = redis.from_url("redis://:{S}@localhost:6379")"#,
            "redis-cli -h cache.internal -a {S} ping",
        ],
    },
    Family {
        id: "mongodb-url-password",
        make: url_password,
        contexts: &[
            "MONGODB_URI=mongodb+srv://admin:{S}@cluster0.ab1cd.mongodb.net/prod?retryWrites=true&w=majority",
            r#"mongoose.connect("mongodb://app:{S}@mongo-0.mongo:27017,mongo-1.mongo:27017/app?replicaSet=rs0");"#,
            "mongosh \"mongodb+srv://cluster0.ab1cd.mongodb.net/\" --username admin --password {S}",
        ],
    },
    Family {
        id: "amqp-url-password",
        make: url_password,
        contexts: &[
            "AMQP_URL=amqp://orders:{S}@rabbitmq:5672/%2f",
            r#"conn, err := amqp.Dial("amqps://orders:{S}@mq.acme.internal:5671/orders")"#,
            "celery:\n  broker_url: amqp://worker:{S}@rabbit.internal:5672//\n",
        ],
    },
    Family {
        id: "url-userinfo-password",
        make: url_password,
        contexts: &[
            "git clone https://deploy:{S}@git.acme.dev/acme/site.git",
            "curl -O ftp://backup:{S}@ftp.acme.dev/db/dump.sql.gz",
            "EMAIL_URL=smtp://postmaster%40mg.acme.dev:{S}@smtp.mailgun.org:587",
            "pip install --index-url https://ci:{S}@pypi.acme.dev/simple/ acme-core",
        ],
    },
    Family {
        id: "ado-net-connection-string",
        make: password,
        contexts: &[
            "\"ConnectionStrings\": {\n  \"Default\": \"Server=tcp:acme.database.windows.net,1433;Initial Catalog=app;User ID=app;Password={S};Encrypt=True;\"\n}\n",
            "Data Source=sql01;Initial Catalog=Orders;User Id=sa;Password={S};TrustServerCertificate=True",
            r#"var cs = "Host=pg.internal;Port=5432;Database=app;Username=app;Password={S}";"#,
            r#"<add name="Main" connectionString="Server=.\SQLEXPRESS;Database=Shop;User Id=shop;Pwd={S};" />"#,
        ],
    },
    Family {
        id: "jdbc-password",
        make: url_password,
        contexts: &[
            "spring.datasource.url=jdbc:mysql://db:3306/app?user=app&password={S}&useSSL=true",
            "jdbc:sqlserver://sql01:1433;databaseName=orders;user=sa;password={S};encrypt=true",
            r#"Connection c = DriverManager.getConnection("jdbc:postgresql://db:5432/app?user=app&password={S}");"#,
        ],
    },
    Family {
        id: "azure-storage-account-key",
        make: |r| b64(&r.bytes(64)),
        contexts: &[
            "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={S};EndpointSuffix=core.windows.net",
            r#""AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=acmefn;AccountKey={S}","#,
            "az storage blob list --account-name acmeprod --account-key {S} -c backups",
            "AZURE_STORAGE_KEY={S}",
        ],
    },
    Family {
        id: "azure-sas-token",
        make: azure_sas_signature,
        contexts: &[
            "https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2025-12-31T23:59:59Z&st=2025-01-01T00:00:00Z&spr=https&sig={S}",
            "AZURE_SAS_TOKEN=?sv=2021-06-08&ss=bfqt&srt=sco&sp=rwdlacupitfx&se=2026-01-01T00:00:00Z&spr=https&sig={S}",
            r#"azcopy copy ./dist "https://acmeweb.blob.core.windows.net/$web?sv=2023-01-03&se=2025-06-30&sr=c&sp=racwl&sig={S}" --recursive"#,
        ],
    },
    Family {
        id: "azure-ad-client-secret",
        make: |r| format!("{}{}Q~{}", r.chars(B62, 3), r.chars(DIGITS, 1), r.chars(AZURE_SECRET, 34)),
        contexts: &[
            "AZURE_CLIENT_SECRET={S}",
            "provider \"azurerm\" {\n  features {}\n  client_id     = var.client_id\n  client_secret = \"{S}\"\n}\n",
            r#""AzureAd": { "Instance": "https://login.microsoftonline.com/", "ClientSecret": "{S}" }"#,
            "az login --service-principal -u \"$APP_ID\" -p {S} --tenant acme.onmicrosoft.com",
        ],
    },
    Family {
        id: "azure-devops-pat",
        make: |r| r.chars(BASE32_LOWER, 52),
        contexts: &[
            "AZURE_DEVOPS_EXT_PAT={S}",
            "git clone https://pat:{S}@dev.azure.com/acme/platform/_git/api",
            "echo {S} | az devops login --organization https://dev.azure.com/acme",
        ],
    },
    Family {
        id: "django-secret-key",
        make: |r| r.chars(DJANGO, 50),
        contexts: &[
            "SECRET_KEY = '{S}'",
            "SECRET_KEY = \"django-insecure-{S}\"",
            "DJANGO_SECRET_KEY=\"{S}\"",
            "env:\n  - name: DJANGO_SECRET_KEY\n    value: \"{S}\"\n",
        ],
    },
    Family {
        id: "laravel-app-key",
        make: |r| b64(&r.bytes(32)),
        contexts: &["APP_KEY=base64:{S}", "'key' => env('APP_KEY', 'base64:{S}'),"],
    },
    Family {
        id: "wordpress-salt",
        make: wordpress_salt,
        contexts: &[
            "define('AUTH_KEY',         '{S}');",
            "define('SECURE_AUTH_SALT', '{S}');",
            "define( 'NONCE_KEY', '{S}' );",
        ],
    },
    Family {
        id: "hex-key-assignment",
        make: secret_hex_key,
        contexts: &[
            "ENCRYPTION_KEY={S}",
            "export MASTER_KEY={S}",
            "SIGNING_KEY: \"{S}\"",
            "production:\n  secret_key_base: {S}\n",
            "HMAC_SECRET={S}",
            r#"const AES_KEY = "{S}";"#,
        ],
    },
    Family {
        id: "base64-key-assignment",
        make: |r| b64(&r.bytes(32)),
        contexts: &[
            "JWT_SIGNING_KEY={S}",
            "SESSION_SECRET={S}",
            "NEXTAUTH_SECRET=\"{S}\"",
            "cookie_secret = \"{S}\"",
            "encryption:\n  provider: aes-gcm\n  key: {S}\n",
        ],
    },
    Family {
        id: "password-env",
        make: password,
        contexts: &[
            "DB_PASSWORD={S}",
            "export POSTGRES_PASSWORD={S}",
            "MYSQL_ROOT_PASSWORD={S}\nMYSQL_DATABASE=shop\n",
            "SMTP_PASS={S}",
            "docker run -e POSTGRES_PASSWORD={S} -p 5432:5432 postgres:16",
        ],
    },
    Family {
        id: "password-yaml",
        make: human_password,
        contexts: &[
            "database:\n  host: db.internal\n  user: app\n  password: \"{S}\"\n",
            "DB_PASSWORD: \"{S}\"",
            "spring:\n  datasource:\n    username: app\n    password: '{S}'\n",
            "services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: \"{S}\"\n",
            "ansible_become_password: \"{S}\"",
        ],
    },
    Family {
        id: "password-json",
        make: human_password,
        contexts: &[
            r#"{"username": "admin", "password": "{S}"}"#,
            r#"{"db": {"host": "db.internal", "user": "app", "pass": "{S}"}}"#,
            r#"{"smtp": {"host": "smtp.acme.dev", "port": 587, "user": "noreply", "password": "{S}"}}"#,
            r#"curl -X POST https://api.acme.dev/login -d '{"email":"ops@acme.dev","password":"{S}"}'"#,
        ],
    },
    Family {
        id: "password-code",
        make: human_password,
        contexts: &[
            r#"conn = psycopg2.connect(host="db", user="app", password="{S}")"#,
            r#"const pool = new Pool({ user: "app", password: "{S}", host: "db" });"#,
            r#"cfg := mysql.Config{User: "app", Passwd: "{S}", Net: "tcp", Addr: "db:3306"}"#,
            r#"let password = "{S}";"#,
            r#"props.setProperty("password", "{S}");"#,
            "define('DB_PASSWORD', '{S}');",
            r#"var cred = new NetworkCredential("svc-backup", "{S}");"#,
            r#"config.password = "{S}""#,
        ],
    },
    Family {
        id: "password-cli",
        make: password,
        contexts: &[
            "mysql -u root -p{S} shop",
            "mysql -uroot --password={S} -h db.internal",
            "./manage.py createsuperuser --username admin --password {S}",
            "docker login -u ci -p {S} registry.acme.dev",
            "sshpass -p '{S}' ssh root@10.0.0.5",
            "PGPASSWORD={S} psql -h db -U app",
            "htpasswd -b -c /etc/nginx/.htpasswd admin {S}",
        ],
    },
    Family {
        id: "password-config-file",
        make: password,
        contexts: &[
            "[client]\nuser=backup\npassword={S}\n",
            "spring.datasource.password={S}",
            "<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{S}</password>\n</server>\n",
            "machine api.acme.dev login ci password {S}",
            "db.internal:5432:app:app:{S}",
            r#"<add key="ClearTextPassword" value="{S}" />"#,
        ],
    },
    Family {
        id: "api-key-assignment",
        make: random_api_key,
        contexts: &[
            r#"apiKey = "{S}""#,
            "./sync --api-key={S} --region eu",
            "API_KEY={S}",
            "weather:\n  api_key: {S}\n",
            r#"{"apiKey": "{S}", "region": "eu"}"#,
            r#"curl "https://api.acme.dev/v2/forecast?api_key={S}&city=Berlin""#,
        ],
    },
    Family {
        id: "api-key-header",
        make: random_api_key,
        contexts: &[
            r#"curl -H "X-API-Key: {S}" https://api.acme.dev/v1/status"#,
            r#"fetch(url, { headers: { "x-api-key": "{S}" } });"#,
            "GET /v1/usage HTTP/1.1\nHost: api.acme.dev\nX-Api-Key: {S}\n",
        ],
    },
    Family {
        id: "client-secret",
        make: opaque_token,
        contexts: &[
            r#"{"client_id": "reports", "client_secret": "{S}"}"#,
            "OAUTH_CLIENT_SECRET={S}",
            "  clientSecret: '{S}',",
            "auth:\n  oidc:\n    client_id: grafana\n    client_secret: {S}\n",
            "curl -d grant_type=client_credentials -d client_id=svc-reports -d client_secret={S} https://auth.acme.dev/oauth/token",
        ],
    },
    Family {
        id: "token-assignment",
        make: opaque_token,
        contexts: &[
            "[registry]\ntoken = \"{S}\"\n",
            "AUTH_TOKEN={S}",
            r#"{"access_token": "{S}", "expires_in": 3600}"#,
            r#"cfg := Config{Endpoint: "https://api.acme.dev", Token: "{S}"}"#,
            "./deploy --token {S} --env prod",
            "oauth:\n  refresh_token: {S}\n",
        ],
    },
    Family {
        id: "age-secret-key",
        make: |r| format!("AGE-SECRET-KEY-1{}", r.chars(BECH32, 58).to_uppercase()),
        contexts: &[
            "# created: 2024-05-17T09:21:33+02:00\n# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n{S}\n",
            "export SOPS_AGE_KEY={S}",
            "stringData:\n  keys.txt: |\n    {S}\n",
        ],
    },
    Family {
        id: "kubernetes-secret-data",
        make: |r| {
            let pw = password(r);
            b64(pw.as_bytes())
        },
        contexts: &[
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n  password: {S}\n",
            "kind: Secret\ndata:\n  DB_PASSWORD: {S}\n  DB_USER: YXBw\n",
        ],
    },
    Family {
        id: "docker-config-auth",
        make: basic_credentials,
        contexts: &[
            r#"{"auths": {"registry.acme.dev": {"auth": "{S}"}}}"#,
            r#"{"auths":{"https://index.docker.io/v1/":{"auth":"{S}","email":"ci@acme.dev"}}}"#,
        ],
    },
    Family {
        id: "kubeconfig-client-key-data",
        make: kube_client_key,
        contexts: &[
            "users:\n- name: admin\n  user:\n    client-key-data: {S}\n",
            "kubectl config set users.admin.client-key-data {S}",
        ],
    },
    Family {
        id: "wireguard-private-key",
        make: |r| b64(&r.bytes(32)),
        contexts: &[
            "[Interface]\nPrivateKey = {S}\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n",
            "wg set wg0 private-key <(echo {S})",
            "wireguard:\n  private_key: \"{S}\"\n",
        ],
    },
    Family {
        id: "ethereum-private-key",
        make: |r| r.chars(HEX, 64),
        contexts: &[
            "PRIVATE_KEY=0x{S}",
            r#"const wallet = new ethers.Wallet("0x{S}", provider);"#,
            "DEPLOYER_PRIVATE_KEY: \"{S}\"",
        ],
    },
    Family {
        id: "alibaba-access-key-id",
        make: |r| format!("LTAI{}", r.chars(B62, 20)),
        contexts: &[
            "ALIBABA_CLOUD_ACCESS_KEY_ID={S}",
            "provider \"alicloud\" {\n  access_key = \"{S}\"\n  region     = \"cn-hangzhou\"\n}\n",
        ],
    },
    Family {
        id: "square-access-token",
        make: |r| format!("EAAA{}", r.chars(B64URL, 60)),
        contexts: &["SQUARE_ACCESS_TOKEN={S}", r#"client = Client(access_token="{S}", environment="production")"#],
    },
    Family {
        id: "discord-bot-token",
        make: discord_bot_token,
        contexts: &["DISCORD_TOKEN={S}", r#"client.login("{S}");"#, r#"bot.run("{S}")"#],
    },
    Family {
        id: "supabase-token",
        make: |r| format!("sbp_{}", r.chars(HEX, 40)),
        contexts: &["SUPABASE_ACCESS_TOKEN={S}", "supabase login --token {S}"],
    },
    Family {
        id: "pulumi-token",
        make: |r| format!("pul-{}", r.chars(HEX, 40)),
        contexts: &["PULUMI_ACCESS_TOKEN={S}", "echo \"PULUMI_ACCESS_TOKEN={S}\" >> \"$GITHUB_ENV\""],
    },
    Family {
        id: "tailscale-auth-key",
        make: |r| format!("tskey-auth-k{}CNTRL-{}", r.chars(B62, 11), r.chars(B62, 33)),
        contexts: &["TS_AUTHKEY={S}", "tailscale up --authkey={S} --advertise-tags=tag:ci"],
    },
    Family {
        id: "groq-key",
        make: |r| format!("gsk_{}", r.chars(B62, 52)),
        contexts: &["GROQ_API_KEY={S}", r#"client = Groq(api_key="{S}")"#],
    },
    Family {
        id: "perplexity-key",
        make: |r| format!("pplx-{}", r.chars(B62, 48)),
        contexts: &[
            "PERPLEXITY_API_KEY={S}",
            r#"curl https://api.perplexity.ai/chat/completions -H "Authorization: Bearer {S}""#,
        ],
    },
    Family {
        id: "replicate-token",
        make: |r| format!("r8_{}", r.chars(B62, 37)),
        contexts: &["REPLICATE_API_TOKEN={S}", r#"replicate = Client(api_token="{S}")"#],
    },
    Family {
        id: "notion-token",
        make: |r| format!("ntn_{}{}", r.chars(DIGITS, 11), r.chars(B62, 35)),
        contexts: &["NOTION_TOKEN={S}", r#"const notion = new Client({ auth: "{S}" });"#],
    },
    Family {
        id: "airtable-pat",
        make: |r| format!("pat{}.{}", r.chars(B62, 14), r.chars(HEX, 64)),
        contexts: &[
            "AIRTABLE_TOKEN={S}",
            r#"curl -H "Authorization: Bearer {S}" https://api.airtable.com/v0/meta/bases"#,
        ],
    },
    Family {
        id: "figma-token",
        make: |r| format!("figd_{}", r.chars(B64URL, 40)),
        contexts: &["FIGMA_TOKEN={S}", r#"curl -H "X-Figma-Token: {S}" https://api.figma.com/v1/me"#],
    },
    Family {
        id: "mailchimp-key",
        make: |r| format!("{}-us{}", r.chars(HEX, 32), r.range(10, 21)),
        contexts: &["MAILCHIMP_API_KEY={S}", r#"mailchimp.setConfig({ apiKey: "{S}", server: "us21" });"#],
    },
    Family {
        id: "rubygems-key",
        make: |r| format!("rubygems_{}", r.chars(HEX, 48)),
        contexts: &["export GEM_HOST_API_KEY={S}", "GEM_HOST_API_KEY={S} gem push acme-core-1.4.2.gem"],
    },
    Family {
        id: "nuget-key",
        make: |r| format!("oy2{}", r.chars(LOWER_NUM, 43)),
        contexts: &[
            "dotnet nuget push Acme.Core.1.4.2.nupkg --api-key {S} --source https://api.nuget.org/v3/index.json",
            "NUGET_API_KEY={S}",
        ],
    },
    Family {
        id: "okta-token",
        make: |r| format!("00{}", r.chars(B64URL, 40)),
        contexts: &["Authorization: SSWS {S}", "OKTA_API_TOKEN={S}"],
    },
    Family {
        id: "datadog-api-key",
        make: |r| r.chars(HEX, 32),
        contexts: &[
            "DD_API_KEY={S}",
            "api_key: {S}\nsite: datadoghq.eu\n",
            "docker run -d -e DD_API_KEY={S} gcr.io/datadoghq/agent:7",
        ],
    },
    Family {
        id: "cloudflare-api-token",
        make: |r| r.chars(B64URL, 40),
        contexts: &[
            "CLOUDFLARE_API_TOKEN={S}",
            "provider \"cloudflare\" {\n  api_token = \"{S}\"\n}\n",
            "CF_API_TOKEN={S} wrangler deploy",
        ],
    },
    Family {
        id: "slack-signing-secret",
        make: |r| r.chars(HEX, 32),
        contexts: &["SLACK_SIGNING_SECRET={S}", r#"  signingSecret: "{S}","#],
    },
    Family {
        id: "heroku-api-key",
        make: uuid,
        contexts: &["HEROKU_API_KEY={S}", "machine api.heroku.com\n  login ops@acme.dev\n  password {S}\n"],
    },
    Family {
        id: "heroku-api-key-v2",
        make: |r| format!("HRKU-AA{}", r.chars(B64URL, 58)),
        contexts: &["HEROKU_API_KEY={S}", "heroku:\n  api_key: {S}\n"],
    },
    Family {
        id: "artifactory-api-key",
        make: |r| format!("AKCp{}", r.chars(B62, 69)),
        contexts: &[
            "ARTIFACTORY_API_KEY={S}",
            r#"curl -H "X-JFrog-Art-Api: {S}" https://acme.jfrog.io/artifactory/api/repositories"#,
        ],
    },
    Family {
        id: "fcm-server-key",
        make: |r| format!("AAAA{}:APA91b{}", r.chars(B64URL, 7), r.chars(B64URL, 134)),
        contexts: &[
            "FCM_SERVER_KEY={S}",
            r#"headers: { Authorization: "key={S}", "Content-Type": "application/json" },"#,
        ],
    },
    Family {
        id: "mapbox-secret-token",
        make: mapbox_secret_token,
        contexts: &["MAPBOX_DOWNLOADS_TOKEN={S}", "machine api.mapbox.com\nlogin mapbox\npassword {S}\n"],
    },
    Family {
        id: "contentful-management-token",
        make: |r| format!("CFPAT-{}", r.chars(B64URL, 43)),
        contexts: &[
            "CONTENTFUL_MANAGEMENT_TOKEN={S}",
            r#"const client = contentful.createClient({ accessToken: "{S}" });"#,
        ],
    },
    Family {
        id: "dropbox-token",
        make: |r| format!("sl.{}", r.chars(B64URL, 135)),
        contexts: &["DROPBOX_ACCESS_TOKEN={S}", r#"dbx = dropbox.Dropbox("{S}")"#],
    },
    Family {
        id: "meta-access-token",
        make: |r| format!("EAAG{}", r.chars(B62, 180)),
        contexts: &["FB_ACCESS_TOKEN={S}", r#"curl "https://graph.facebook.com/v19.0/me/accounts?access_token={S}""#],
    },
    Family {
        id: "bitbucket-app-password",
        make: |r| format!("ATBB{}", r.chars(B62, 32)),
        contexts: &["BITBUCKET_APP_PASSWORD={S}", "git clone https://acme-ci:{S}@bitbucket.org/acme/api.git"],
    },
    Family {
        id: "onepassword-service-account-token",
        make: onepassword_token,
        contexts: &["OP_SERVICE_ACCOUNT_TOKEN={S}", "export OP_SERVICE_ACCOUNT_TOKEN=\"{S}\""],
    },
    Family {
        id: "easypost-key",
        make: |r| format!("EZAK{}", r.chars(B62, 54)),
        contexts: &["EASYPOST_API_KEY={S}", r#"client = easypost.EasyPostClient("{S}")"#],
    },
    Family {
        id: "dynatrace-token",
        make: |r| format!("dt0c01.{}.{}", r.chars(UPPER_NUM, 24), r.chars(UPPER_NUM, 64)),
        contexts: &[
            "DT_API_TOKEN={S}",
            r#"curl -H "Authorization: Api-Token {S}" https://abc12345.live.dynatrace.com/api/v2/metrics"#,
        ],
    },
];

const LOOK_ALIKES: &[Family] = &[
    Family {
        id: "git-sha",
        make: |r| r.chars(HEX, 40),
        contexts: &[
            "commit {S}\nAuthor: Dana Scully <dana@acme.dev>\nDate:   Tue May 14 10:02:11 2024 +0200\n\n    Fix token refresh race\n",
            r#"{"sha": "{S}", "commit": {"message": "Rotate signing keys"}}"#,
            r#"serde = { git = "https://github.com/serde-rs/serde", rev = "{S}" }"#,
            "git checkout {S} -- src/auth/token.rs",
            "      - uses: actions/checkout@{S} # v4.1.7",
            "lodash@^4.17.21:\n  version \"4.17.21\"\n  resolved \"https://registry.yarnpkg.com/lodash/-/lodash-4.17.21.tgz#{S}\"\n",
        ],
    },
    Family {
        id: "short-git-sha",
        make: |r| r.chars(HEX, 7),
        contexts: &[
            "HEAD is now at {S} Rotate the signing key before the release",
            "Merge pull request #4821 from acme/fix-secret-scan ({S})",
            "git revert {S}",
        ],
    },
    Family {
        id: "uuid",
        make: uuid,
        contexts: &[
            r#"{"id": "{S}", "type": "memory", "created_at": "2024-05-14T10:02:11Z"}"#,
            "X-Request-Id: {S}",
            "trace {S} failed after 3 retries",
            "tenant_id: {S}",
            "metadata:\n  name: api\n  uid: {S}\n",
        ],
    },
    Family {
        id: "data-uri",
        make: png_base64,
        contexts: &[
            r#"<img alt="logo" src="data:image/png;base64,{S}">"#,
            r#"background-image: url("data:image/png;base64,{S}");"#,
            "![diagram](data:image/png;base64,{S})",
        ],
    },
    Family {
        id: "sri-integrity",
        make: |r| b64(&r.bytes(64)),
        contexts: &[
            r#""integrity": "sha512-{S}","#,
            "  integrity sha512-{S}\n",
            "      \"integrity\": \"sha512-{S}\",\n      \"dev\": true",
        ],
    },
    Family {
        id: "sri-integrity-sha384",
        make: |r| b64(&r.bytes(48)),
        contexts: &[
            r#"<script src="https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js" integrity="sha384-{S}" crossorigin="anonymous"></script>"#,
        ],
    },
    Family {
        id: "sha256-checksum",
        make: |r| r.chars(HEX, 64),
        contexts: &[
            "[[package]]\nname = \"regex\"\nversion = \"1.10.4\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{S}\"\n",
            "  url \"https://github.com/acme/tool/releases/download/v1.4.2/tool-1.4.2.tar.gz\"\n  sha256 \"{S}\"\n",
            "{S}  tmws-x86_64-unknown-linux-gnu.tar.gz",
            r#"assert_eq!(hex(&sha256(b"")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");"#,
        ],
    },
    Family {
        id: "docker-digest",
        make: |r| r.chars(HEX, 64),
        contexts: &[
            "image: ghcr.io/acme/api@sha256:{S}",
            "FROM node:20-alpine@sha256:{S} AS build",
            "Digest: sha256:{S}\nStatus: Downloaded newer image for postgres:16\n",
        ],
    },
    Family {
        id: "go-sum",
        make: |r| b64(&r.bytes(32)),
        contexts: &["github.com/stretchr/testify v1.9.0 h1:{S}", "golang.org/x/crypto v0.23.0/go.mod h1:{S}"],
    },
    Family {
        id: "ssh-public-key",
        make: ssh_ed25519_public,
        contexts: &[
            "ssh-ed25519 {S} alice@laptop",
            "command=\"/usr/local/bin/backup\",no-pty ssh-ed25519 {S} backup@nas",
            "github.com ssh-ed25519 {S}",
        ],
    },
    Family {
        id: "ssh-rsa-public-key",
        make: ssh_rsa_public,
        contexts: &[
            "ssh-rsa {S} deploy@ci",
            "users:\n  - name: ops\n    ssh_authorized_keys:\n      - ssh-rsa {S} ops@bastion\n",
        ],
    },
    Family { id: "ssh-ecdsa-public-key", make: ssh_ecdsa_public, contexts: &["gitlab.com ecdsa-sha2-nistp256 {S}"] },
    Family {
        id: "pem-certificate",
        make: certificate_body,
        contexts: &[
            "-----BEGIN CERTIFICATE-----\n{S}\n-----END CERTIFICATE-----\n",
            "ca.crt: |\n  -----BEGIN CERTIFICATE-----\n  {S}\n  -----END CERTIFICATE-----\n",
            r#"{"ca": "-----BEGIN CERTIFICATE-----\n{SJ}\n-----END CERTIFICATE-----\n"}"#,
        ],
    },
    Family {
        id: "pem-public-key",
        make: public_key_body,
        contexts: &[
            "-----BEGIN PUBLIC KEY-----\n{S}\n-----END PUBLIC KEY-----\n",
            "JWT_PUBLIC_KEY=\"-----BEGIN PUBLIC KEY-----\n{S}\n-----END PUBLIC KEY-----\"",
        ],
    },
    Family {
        id: "pem-ec-public-key",
        make: ec_public_key_body,
        contexts: &["-----BEGIN PUBLIC KEY-----\n{S}\n-----END PUBLIC KEY-----"],
    },
    Family {
        id: "pem-certificate-request",
        make: csr_body,
        contexts: &["-----BEGIN CERTIFICATE REQUEST-----\n{S}\n-----END CERTIFICATE REQUEST-----\n"],
    },
    Family {
        id: "pgp-public-key",
        make: pgp_public_body,
        contexts: &["-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{S}\n=ab12\n-----END PGP PUBLIC KEY BLOCK-----\n"],
    },
    Family {
        id: "pgp-signature",
        make: pgp_signature_body,
        contexts: &["-----BEGIN PGP SIGNATURE-----\n\n{S}\n=Zx3Q\n-----END PGP SIGNATURE-----\n"],
    },
    Family {
        id: "jwks-public-modulus",
        make: |r| b64url(&r.bytes(256)),
        contexts: &[r#"{"keys":[{"kty":"RSA","kid":"2024-05","use":"sig","alg":"RS256","n":"{S}","e":"AQAB"}]}"#],
    },
    Family {
        id: "stripe-publishable-key",
        make: |r| r.chars(B62, 99),
        contexts: &[
            r#"const stripe = Stripe("pk_live_51{S}");"#,
            "STRIPE_PUBLISHABLE_KEY=pk_live_51{S}",
            "NEXT_PUBLIC_STRIPE_KEY=pk_test_51{S}",
        ],
    },
    Family { id: "mapbox-public-token", make: mapbox_public_token, contexts: &["mapboxgl.accessToken = '{S}';"] },
    Family {
        id: "google-oauth-client-id",
        make: |r| r.chars(LOWER_NUM, 32),
        contexts: &["GOOGLE_CLIENT_ID=123456789012-{S}.apps.googleusercontent.com"],
    },
    Family {
        id: "age-public-key",
        make: |r| r.chars(BECH32, 58),
        contexts: &["sops --encrypt --age age1{S} secrets.yaml > secrets.enc.yaml"],
    },
    Family {
        id: "wireguard-public-key",
        make: |r| b64(&r.bytes(32)),
        contexts: &["[Peer]\nPublicKey = {S}\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.acme.dev:51820\n"],
    },
    Family {
        id: "documented-example-key",
        make: none,
        contexts: &[
            "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            "export AWS_ACCESS_KEY_ID=AKIAI44QH8DHBEXAMPLE",
            "export AWS_SECRET_ACCESS_KEY=je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
            r#"{"Credentials": {"AccessKeyId": "ASIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}}"#,
            "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        ],
    },
    Family {
        id: "placeholder",
        make: none,
        contexts: &[
            "GITHUB_TOKEN=${GITHUB_TOKEN}",
            r#"curl -H "Authorization: Bearer $ACCESS_TOKEN" https://api.acme.dev/v1/me"#,
            "api_key: <your-api-key>",
            "          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
            "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
            "token: ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "password: \"********\"",
            "OPENAI_API_KEY=sk-...",
            "DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}:5432/app",
            r#""client_secret": "{{ client_secret }}""#,
            "Authorization: Bearer <token>",
            "aws_secret_access_key = YOUR_SECRET_ACCESS_KEY",
            "db_password: \"{{ vault_db_password }}\"",
            "-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----",
            "STRIPE_SECRET_KEY=sk_live_****************************",
        ],
    },
    Family {
        id: "reference-in-code",
        make: none,
        contexts: &[
            r#"password = os.environ["DB_PASSWORD"]"#,
            r#"token := os.Getenv("TOKEN")"#,
            "  apiKey: process.env.API_KEY,",
            "conn = connect(host=host, user=user, password=password)",
            r#"let token = std::env::var("GITHUB_TOKEN")?;"#,
            r#"String secret = System.getenv("CLIENT_SECRET");"#,
            "  password = var.db_password",
            "        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              name: db\n              key: password\n",
            "api_key = settings.OPENAI_API_KEY",
            r#"token = request.headers.get("Authorization")"#,
            "const { password } = req.body;",
            "  password: random_password.db.result",
        ],
    },
    Family {
        id: "type-declaration",
        make: none,
        contexts: &[
            "  password: string;",
            "    pub token: Option<String>,",
            "    private String apiKey;",
            "\tPassword string `json:\"password\" yaml:\"password\"`",
            "def login(username: str, password: str) -> Token:",
            "fn verify(token: &str, secret: &[u8]) -> Result<Claims, Error>",
            "interface Credentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string }",
        ],
    },
    Family {
        id: "prose",
        make: none,
        contexts: &[
            "Rotate the API key every 90 days and revoke the old one.",
            "The password reset flow sends a one-time token by email.",
            "We use token bucket rate limiting: 100 tokens, refilled at 10 per second.",
            "Never commit a secret key; store it in the vault and reference it by name.",
            "The tokenizer splits text into tokens before the embedding step.",
            "If the bearer token has expired, the API answers 401 and the client refreshes it.",
            "Set AWS_SECRET_ACCESS_KEY in your shell, not in the repository.",
        ],
    },
    Family {
        id: "config-naming-secrets",
        make: none,
        contexts: &[
            "max_tokens: 4096",
            r#"{"token_type": "bearer", "expires_in": 3600, "scope": "read"}"#,
            "password_min_length = 12",
            "secret_name: prod-db",
            r#""token_endpoint": "https://oauth2.googleapis.com/token","#,
            "auth_method: password",
            "api_key_header: X-API-Key",
            r#"PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]"#,
            "session_token_ttl_seconds = 900",
            "[secrets]\nbackend = \"vault\"\npath = \"kv/data/app\"\n",
            "SSH_KEY_PATH=~/.ssh/id_ed25519",
            "GPG_KEY_ID=3AA5C34371567BD2",
            "PUBLIC_KEY_URL=https://auth.acme.dev/.well-known/jwks.json",
        ],
    },
    Family {
        id: "url-without-credentials",
        make: none,
        contexts: &[
            "Clone it with https://alice@git.acme.dev/acme/tools.git",
            "git@github.com:acme/platform.git",
            "https://example.com/search?q=token&page=2",
            "ssh://git@gitlab.com:22/acme/infra.git",
            "https://github.com/acme/api/blob/main/src/auth/password_reset.rs#L42",
            "DATABASE_URL=postgres://localhost:5432/app",
            "mongodb://mongo-0.mongo:27017,mongo-1.mongo:27017/app?replicaSet=rs0",
        ],
    },
    Family {
        id: "sentry-dsn",
        make: |r| r.chars(HEX, 32),
        contexts: &["SENTRY_DSN=https://{S}@o450123.ingest.sentry.io/5512345"],
    },
    Family {
        id: "identifier",
        make: none,
        contexts: &[
            "AbstractSingletonProxyFactoryBean",
            "class OAuth2AuthorizationCodeGrantRequestEntityConverter extends AbstractOAuth2AuthorizationGrantRequestEntityConverter {}",
            "fn get_refresh_token_from_authorization_header_or_cookie_store()",
            "const TOKEN_REFRESH_INTERVAL_MILLISECONDS: u64 = 300_000;",
        ],
    },
    Family {
        id: "base64-of-text",
        make: |r| {
            b64(r.pick(&["log_level: info\nlisten: 0.0.0.0:8080\n", "Hello from the build server!\n"]).as_bytes())
        },
        contexts: &["binaryData:\n  app.yaml: {S}\n", "echo '{S}' | base64 -d"],
    },
    Family {
        id: "base64-blob",
        make: |r| wrap(&b64(&r.bytes(180)), 76),
        contexts: &["Content-Type: application/pdf\nContent-Transfer-Encoding: base64\n\n{S}\n"],
    },
    Family {
        id: "numbers-and-versions",
        make: none,
        contexts: &[
            "color: #1f2937; background: #f9fafb; border-color: #e5e7eb;",
            "version = \"1.13.1\"",
            "Listening on 10.0.12.7:8080 and [2001:db8::1]:8080",
            "2024-05-17T09:21:33.123Z INFO request completed in 42ms",
            "created_at: 1715937693",
            "arn:aws:iam::123456789012:role/deploy",
            r#""ETag": "\"9b2cf535f27731c974343645a3985328\"""#,
        ],
    },
    Family {
        id: "hash-like",
        make: |r| r.chars(HEX, 40),
        contexts: &["recipient: 0x{S}", "ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi"],
    },
    Family {
        id: "bundle-hash",
        make: |r| r.chars(HEX, 8),
        contexts: &[r#"<script src="/assets/main.{S}.js" defer></script>"#],
    },
    Family {
        id: "markdown",
        make: none,
        contexts: &[
            "```rust\nlet token = lexer.next_token();\n```",
            "| Name | Type | Description |\n|---|---|---|\n| `token` | string | The access token returned by `/login` |",
            "## Authentication\n\nPass your key in the `X-API-Key` header.",
        ],
    },
];

// ---------------------------------------------------------------------------------------
// Building and judging.
// ---------------------------------------------------------------------------------------

struct Case {
    /// The family's id and the number of the context: `github-pat#2`.
    name: String,
    template: &'static str,
    text: String,
    /// The sensitive part, as it is in `text`; empty for a look-alike.
    secret: String,
}

/// `template` with `value` at its placeholder, and `value` as it is in the text: at `{SJ}`
/// its newlines become `\n`; at a `{S}` preceded on its line by spaces only, its lines are
/// indented like the first.
fn fill(template: &str, value: &str) -> (String, String) {
    if let Some(at) = template.find("{SJ}") {
        let value = value.replace('\n', "\\n");
        return (format!("{}{value}{}", &template[..at], &template[at + 4..]), value);
    }
    let Some(at) = template.find("{S}") else {
        return (template.to_owned(), String::new());
    };
    let line = template[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &template[line..at];
    let value = if !indent.is_empty() && indent.bytes().all(|b| b == b' ') {
        value.replace('\n', &format!("\n{indent}"))
    } else {
        value.to_owned()
    };
    (format!("{}{value}{}", &template[..at], &template[at + 3..]), value)
}

fn build(families: &[Family], rng: &mut Rng) -> Vec<Case> {
    let mut cases = Vec::new();
    for family in families {
        for (n, &template) in family.contexts.iter().enumerate() {
            let value = (family.make)(rng);
            let (text, secret) = fill(template, &value);
            cases.push(Case { name: format!("{}#{n}", family.id), template, text, secret });
        }
    }
    cases
}

/// A suite's cases: (secrets, look-alikes).
struct Suite {
    secrets: Vec<Case>,
    look_alikes: Vec<Case>,
}

/// The first suite.
fn first() -> Suite {
    let mut rng = Rng(SEED);
    let secrets = build(SECRETS, &mut rng);
    let look_alikes = build(LOOK_ALIKES, &mut rng);
    Suite { secrets, look_alikes }
}

/// The second suite, from a seed of its own (adding to one suite changes nothing in the
/// other).
fn second() -> Suite {
    let mut rng = Rng(SEED ^ 0x0002);
    let secrets = build(second::SECRETS, &mut rng);
    let look_alikes = build(second::LOOK_ALIKES, &mut rng);
    Suite { secrets, look_alikes }
}

/// Every case of both suites, secrets and look-alikes.
fn all_cases() -> Vec<Case> {
    let (a, b) = (first(), second());
    a.secrets.into_iter().chain(a.look_alikes).chain(b.secrets).chain(b.look_alikes).collect()
}

/// The secret's 8-character windows; a shorter secret is its own only window.
fn windows(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().collect();
    if chars.len() < 8 {
        return vec![secret.to_owned()];
    }
    chars.windows(8).map(|w| w.iter().collect()).collect()
}

/// Whether any part of `secret` is still in `text`.
fn survives(text: &str, secret: &str) -> bool {
    windows(secret).iter().any(|w| text.contains(w.as_str()))
}

/// `text` with every mark replaced by a NUL: a mark names its rule, and a rule's name may
/// share a word with the token it found (`[REDACTED:rubygems-…]` for `rubygems_…`).
fn without_marks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("[REDACTED:") {
        out.push_str(&rest[..at]);
        out.push('\u{0}');
        rest = &rest[at..];
        rest = rest.find(']').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out
}

/// The marks of `text` that are not `[REDACTED:<lowercase-id>]`.
fn malformed_marks(text: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for (at, _) in text.match_indices("[REDACTED") {
        let rest = &text[at + "[REDACTED".len()..];
        let ok = rest.strip_prefix(':').and_then(|id| id.find(']').map(|end| &id[..end])).is_some_and(|id| {
            id.starts_with(|c: char| c.is_ascii_lowercase())
                && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
        if !ok {
            bad.push(rest.chars().take(40).collect());
        }
    }
    bad
}

/// Holds the cases that `failed` (by name, with what to show of each) to the `known`
/// ones: a case that fails and is not known, a known one that no longer fails, and a known
/// name that is no case of `cases` are each reported by name.
#[track_caller]
fn judge(what: &str, list: &str, known: &[&str], cases: &[&Case], failed: &[(&Case, String)]) {
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let known: BTreeSet<&str> = known.iter().copied().collect();
    let failed_names: BTreeSet<&str> = failed.iter().map(|(c, _)| c.name.as_str()).collect();
    let mut report = Vec::new();
    for (case, out) in failed.iter().filter(|(c, _)| !known.contains(c.name.as_str())) {
        report.push(format!("new {what} {}:\n    text: {:?}\n    out:  {out:?}", case.name, case.text));
    }
    for name in known.iter().filter(|n| names.contains(*n) && !failed_names.contains(*n)) {
        report.push(format!("{name} is no longer a {what}: remove it from {list}"));
    }
    for name in known.iter().filter(|n| !names.contains(*n)) {
        report.push(format!("{name}, in {list}, is no case of this kind"));
    }
    assert!(report.is_empty(), "{} case(s):\n{}", report.len(), report.join("\n"));
}

/// The suite's own correctness: every secret is in its text once, nothing of it is elsewhere
/// in the text, no text holds a mark already, and no two families share an id.
#[test]
fn the_suite_itself_is_sound() {
    let (a, b) = (first(), second());
    let mut bugs = Vec::new();
    for case in a.secrets.iter().chain(&b.secrets) {
        let placeholders = case.template.matches("{S}").count() + case.template.matches("{SJ}").count();
        if placeholders != 1 {
            bugs.push(format!("{}: {placeholders} placeholders in {:?}", case.name, case.template));
        }
        if case.secret.is_empty() || case.text.matches(case.secret.as_str()).count() != 1 {
            bugs.push(format!("{}: the secret {:?} is not once in {:?}", case.name, case.secret, case.text));
        } else if survives(&case.text.replacen(case.secret.as_str(), "\u{0}", 1), &case.secret) {
            bugs.push(format!(
                "{}: part of the secret {:?} is also outside it in {:?}",
                case.name, case.secret, case.text
            ));
        }
    }
    for case in a.secrets.iter().chain(&a.look_alikes).chain(&b.secrets).chain(&b.look_alikes) {
        if case.text.contains("[REDACTED") {
            bugs.push(format!("{}: a case holds a mark already: {:?}", case.name, case.text));
        }
    }
    for family in LOOK_ALIKES.iter().chain(second::LOOK_ALIKES) {
        for template in family.contexts {
            if template.matches("{S}").count() + template.matches("{SJ}").count() > 1 {
                bugs.push(format!("{}: more than one placeholder in {template:?}", family.id));
            }
        }
    }
    let families = SECRETS.iter().chain(LOOK_ALIKES).chain(second::SECRETS).chain(second::LOOK_ALIKES);
    let mut ids: Vec<&str> = families.map(|f| f.id).collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    if ids.len() != count {
        bugs.push("format and look-alike ids are not distinct".to_owned());
    }
    assert!(bugs.is_empty(), "the suite itself is wrong:\n{}", bugs.join("\n"));

    // The size of each suite, so that a case dropped by an edit of the tables is seen. The
    // second suite's formats named `…-bare` write the first suite's formats in new
    // contexts; the others are formats the first lacks.
    let new_formats = second::SECRETS.iter().filter(|f| !f.id.ends_with("-bare")).count();
    assert_eq!(
        (a.secrets.len(), SECRETS.len(), a.look_alikes.len()),
        (428, 132, 140),
        "the first suite: secrets, formats, look-alikes"
    );
    assert_eq!(
        (b.secrets.len(), second::SECRETS.len(), new_formats, b.look_alikes.len()),
        (322, 170, 167, 160),
        "the second suite: secrets, formats, new formats, look-alikes"
    );
}

#[test]
fn every_secret_is_redacted_but_the_known_misses() {
    let (a, b) = (first(), second());
    let secrets: Vec<&Case> = a.secrets.iter().chain(&b.secrets).collect();
    let mut misses = Vec::new();
    for &case in &secrets {
        let out = redact(&case.text).text;
        if survives(&without_marks(&out), &case.secret) {
            misses.push((case, out));
        }
    }
    judge("miss", "KNOWN_MISSES", KNOWN_MISSES, &secrets, &misses);
}

#[test]
fn every_look_alike_is_left_but_the_known_false_positives() {
    let (a, b) = (first(), second());
    let look_alikes: Vec<&Case> = a.look_alikes.iter().chain(&b.look_alikes).collect();
    let mut changed = Vec::new();
    for &case in &look_alikes {
        let out = redact(&case.text).text;
        if out != case.text {
            changed.push((case, out));
        }
    }
    judge("false positive", "KNOWN_FALSE_POSITIVES", KNOWN_FALSE_POSITIVES, &look_alikes, &changed);
}

/// Redacting an output again changes nothing, and every mark is `[REDACTED:<lowercase-id>]`.
#[test]
fn every_output_is_final_and_its_marks_well_formed() {
    let mut bugs = Vec::new();
    for case in &all_cases() {
        let out = redact(&case.text).text;
        let again = redact(&out).text;
        if again != out {
            bugs.push(format!("{} changes when redacted again:\n    once:  {out:?}\n    twice: {again:?}", case.name));
        }
        for mark in malformed_marks(&out) {
            bugs.push(format!("{}: malformed mark {mark:?}", case.name));
        }
    }
    assert!(bugs.is_empty(), "{}", bugs.join("\n"));
}

#[test]
fn count_is_the_number_of_marks_inserted() {
    for case in &all_cases() {
        let out = redact(&case.text);
        let marks = out.text.matches("[REDACTED:").count() - case.text.matches("[REDACTED:").count();
        assert_eq!(out.count, marks, "{}: count {} but {marks} marks in {:?}", case.name, out.count, out.text);
    }
}

/// The searches that pick rules and the windows they run over lose nothing the rules find
/// over the whole text: on every case of both suites, and on the corpora.
#[test]
fn picking_rules_and_windows_loses_no_secret() {
    let mut texts: Vec<String> = all_cases().into_iter().map(|c| c.text).collect();
    for (rel, bytes) in super::util::copy_tree(&super::util::corpora()) {
        if rel.ends_with(".md") {
            texts.extend(String::from_utf8(bytes).ok());
        }
    }
    assert!(texts.len() > 1_400, "{} texts", texts.len());
    for text in &texts {
        // `.pgpass` lines shorter than a run of token characters are left (the searches
        // wake that rule inside runs only).
        let everywhere = tmws::redact::find_everywhere(text).into_iter().filter(|f| f.rule != "pgpass-password");
        let picked = tmws::redact::find(text);
        for f in everywhere {
            assert!(
                picked.iter().any(|p| p.start <= f.start && f.end <= p.end),
                "{} {:?} is found over the whole text, not by find: {text:?}",
                f.rule,
                &text[f.start..f.end]
            );
        }
    }
}
