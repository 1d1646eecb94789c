//! Passwords told in a sentence, in the languages people write notes in: "the password
//! for the staging database is Xk29…", "das Passwort lautet …", "le mot de passe est …",
//! "la contraseña es …", "a senha é …", "la password è …", "het wachtwoord is …",
//! "パスワードは「…」", "密码是 …", "비밀번호는 …", "пароль — …".
//!
//! The word for *password* wakes the rule; what follows it decides. A value comes after a
//! word or a sign that says "is" (`is`, `lautet`, `est`, `:`, `=`, `は`, `是`, `는`, `—`),
//! possibly after a few words that say which password it is; or, with nothing between,
//! right after the word (`WITH PASSWORD 'x'`, `пароль Xk29…`) when it is quoted or made
//! of more than letters. A value in quotes is a password unless it is a placeholder; a
//! bare one must look like one: ASCII, six characters or more, letters with digits or
//! signs, and none of the words and names that follow "password is" in documentation
//! (`required`, `bcrypt-hashed`, `SHA-256`, `12-characters`, `$DB_PASSWORD`).

use super::MARK_PREFIX;
use super::rules::{Caps, Window, placeholder, placeholder_word, reference, type_word};

/// The words for *password*, as the lowercase copy of a text holds them: ASCII ones
/// (folded), and others as written; the expression below lists their forms. Some are
/// found by a part of them (see [`lead`]): the searcher for them all is fastest when no
/// word starts like the common words of prose (`pass` finds `password`, `passphrase`,
/// `mot de passe`, `Passwort`; `trase` finds `contraseña`; `ароль` finds `Пароль` and
/// `пароль`).
pub(super) const KEYWORDS: &[&str] = &[
    "pass",
    "kennwort",
    "trase",
    "senha",
    "wachtwoord",
    "haslo",
    "hasło",
    "sifre",
    "şifre",
    "lösenord",
    "パスワード",
    "暗証番号",
    "密码",
    "密碼",
    "口令",
    "비밀번호",
    "암호",
    "패스워드",
    "ароль",
];

/// The expression: a word for *password*, up to 60 characters of the same line that say
/// which one, a word or a sign that says "is", and the value; or the value right after the
/// word. Literals outside ASCII match
/// their UTF-8 bytes (expressions run without Unicode; a class cannot hold them, so they
/// are alternatives).
pub(super) const PATTERN: &str = concat!(
    r"(?i)(?P<word>passw[a-z]*|passphrase|passcode|kennw[a-z]*|mot de passe|contrase(?:ña|na)s?|senhas?|wachtwoord(?:en)?",
    r"|has(?:ło|lo)|(?:ş|s)ifre(?:niz|si|n)?|l(?:ö|o)senord(?:et)?|パスワード|暗証番号|密码|密碼|口令|비밀번호|암호|패스워드",
    r"|(?:П|п)арол(?:ь|я|ем|ю|и|ей))",
    // Which password (`for the staging database`, `dell'admin`, `от базы данных`): words,
    // not the signs that start or end a field, a tag or a quotation (`[PWD= *password*;]
    // [DATABASE= …]`, `password, e.g.: "1234"`); then a word or a sign that says "is".
    r"(?:[^\r\n;,|<>\[\]{}()=:\x22`]{0,60}?(?:",
    // A word that says "is", between blanks.
    r"[ \t]+(?:is|was|is[ \t]+now|is[ \t]+set[ \t]+to|set[ \t]+to|to|lautet|ist|est|es|é|è|är|er|jest|это|are|sont|são|son|sono|zijn)[ \t]*:?[ \t]+",
    // A sign, or a particle written against the word (`は`, `是`, `는`).
    r"|[ \t]*(?::=|=>|->|:|=|：|は|が|是|为|為|는|은|이|가)[ \t]*",
    r"|[ \t]+(?:—|–|-)[ \t]+",
    r")(?:",
    r#""(?P<s>[^"\r\n]{3,64})"|'(?P<s2>[^'\r\n]{3,64})'|`(?P<s3>[^`\r\n]{3,64})`"#,
    r"|(?:«|“|„|「|『|‹)[ \t]*(?P<s4>[!-~]{3,64}?)[ \t]*(?:»|”|“|」|』|›)",
    // A bare value: from a character that can start one to one that can end one, and no
    // letter or digit after it (a longer run is no value of this rule).
    r"|(?P<s5>[A-Za-z0-9!#$%&*+/=?@^_~.\-][!-~]{1,62}[A-Za-z0-9#$%&*+/=@^_~\-])(?:[^A-Za-z0-9]|$)",
    r")",
    // Nothing but blanks between the word and a quoted value, or one made of more than
    // letters (`WITH PASSWORD 'x'`, `пароль Xk29…`).
    r"|[ \t]+(?P<s6>[A-Za-z]*[0-9#$%&*+@^_~](?:[!-~]{0,62}[A-Za-z0-9#$%&*+/=@^_~\-])?)(?:[^A-Za-z0-9]|$)",
    r#"|[ \t]+(?:"(?P<s7>[^"\r\n]{3,64})"|'(?P<s8>[^'\r\n]{3,64})')"#,
    r")",
);

/// The longest stretch of a line looked at after the word: what says which password it
/// is, the word that says "is" and the value.
const AFTER: usize = 140;

/// The signs and particles that say "is" written against what comes before (`:`, `は`).
const SIGNS: &[&str] =
    &[":=", "=>", "->", ":", "=", "：", "は", "が", "是", "为", "為", "는", "은", "이", "가", "—", "–", "-"];

/// What ends the words that say which password (see [`PATTERN`]).
const FIELD_ENDS: &[char] = &['\r', '\n', ';', ',', '|', '<', '>', '[', ']', '{', '}', '(', ')', '=', ':', '"', '`'];

/// The words that say "is", between blanks.
const LINKS: &[&str] = &[
    "is", "was", "now", "to", "lautet", "ist", "est", "es", "é", "è", "är", "er", "jest", "это", "are", "sont", "são",
    "son", "sono", "zijn",
];

/// The quotes a value may be in: (opening, closing).
const QUOTES: &[(&str, &str)] =
    &[("\"", "\""), ("'", "'"), ("`", "`"), ("«", "»"), ("“", "”"), ("„", "“"), ("「", "」"), ("『", "』"), ("‹", "›")];

/// Whether the `pass` between `before` and `after` (lowercase) starts a word for
/// *password* (`password`, `passwort`, `passwd`, `passphrase`, `passcode`, `mot de passe`),
/// not `pass over`, `passing`, `passport`.
fn password_word(before: &[u8], after: &[u8]) -> bool {
    after.starts_with(b"w")
        || after.starts_with(b"phrase")
        || after.starts_with(b"code")
        || after.starts_with(b"e") && !after.get(1).is_some_and(u8::is_ascii_alphabetic) && before.ends_with(b"mot de ")
}

/// How many bytes of its word come before a keyword that is part of it.
fn lead(keyword: &str) -> usize {
    match keyword {
        "trase" => "con".len(),
        "ароль" => "п".len(),
        _ => 0,
    }
}

/// A window that can hold a password told in a sentence: after one of the words for
/// *password*, on its line, a value that [`password_value`] takes, after a word or a sign
/// that says "is" (or, quoted or made of more than letters, right after the word). Most
/// documentation that names passwords ("the password is required", "パスワードは8文字以上")
/// never compiles the expression.
pub(super) fn told(w: &Window<'_>) -> bool {
    let ascii = w.lower.is_ascii();
    KEYWORDS.iter().filter(|k| !ascii || k.is_ascii()).any(|k| {
        memchr::memmem::find_iter(w.lower, k.as_bytes()).any(|at| {
            // A name (`DB_PASSWORD`) or a mark's rule (`[REDACTED:cli-password]`) is no word
            // of the text.
            let start = at.saturating_sub(lead(k));
            if *k == "pass" && !password_word(&w.lower[..at], &w.lower[at + k.len()..]) {
                return false;
            }
            let line = memchr::memrchr(b'\n', &w.text[..start]).map_or(0, |nl| nl + 1);
            if !std::str::from_utf8(&w.text[line..start]).is_ok_and(word_starts) {
                return false;
            }
            let from = at + k.len();
            let end = memchr::memchr(b'\n', &w.text[from..]).map_or(w.text.len(), |e| from + e).min(from + AFTER);
            let mut end = end;
            while end > from && std::str::from_utf8(&w.text[from..end]).is_err() {
                end -= 1;
            }
            std::str::from_utf8(&w.text[from..end]).is_ok_and(told_in)
        })
    })
}

/// Whether `rest`, what follows a word for *password* on its line, tells a password.
fn told_in(rest: &str) -> bool {
    // The rest of the word itself (`password`, `contraseña`, `пароля`); a kana or a
    // hangul syllable after it is a particle (`は`, `는`), not part of it.
    let rest = rest.trim_start_matches(|c: char| c.is_alphabetic() && u32::from(c) < 0x3000);
    if in_code(rest) {
        return false;
    }
    // Right after the word and a blank: a quoted value, or one made of more than letters.
    if let Some(after) = rest.strip_prefix([' ', '\t']) {
        match value_at(after.trim_start_matches([' ', '\t'])) {
            Some((v, true)) if password_value(v, true) => return true,
            Some((v, false)) if strong_bare(v) && password_value(v, false) => return true,
            _ => {}
        }
    }
    // After a word or a sign that says "is", maybe past words that say which password.
    let mut at = 0;
    while at < rest.len() {
        let here = &rest[at..];
        let linked = SIGNS.iter().find_map(|s| here.strip_prefix(s)).or_else(|| {
            let word = here.strip_prefix([' ', '\t'])?;
            LINKS.iter().find_map(|l| word.strip_prefix(l).filter(|after| after.starts_with([' ', '\t', ':'])))
        });
        if let Some(after) = linked
            && let Some((v, quoted)) = value_at(after.trim_start_matches([' ', '\t', ':']))
            && password_value(v, quoted)
        {
            return true;
        }
        let c = here.chars().next().unwrap_or(' ');
        if FIELD_ENDS.contains(&c) {
            // The words that say which password end here: no value further on is its.
            return false;
        }
        at += c.len_utf8();
    }
    false
}

/// The value that starts `text`: the inside of its quotes (and `true`), or its run of ASCII
/// graphic characters without the punctuation that ends a sentence.
fn value_at(text: &str) -> Option<(&str, bool)> {
    for (open, close) in QUOTES {
        if let Some(inner) = text.strip_prefix(open) {
            let end = inner.find(close)?;
            return Some((inner[..end].trim(), true));
        }
    }
    // As the expression reads one: from a character that can start a value to the last
    // one that can end it.
    if !text.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric() || b"!#$%&*+/=?@^_~.-".contains(&b)) {
        return None;
    }
    let len = text.bytes().take_while(|b| b.is_ascii_graphic()).count();
    let v = text[..len].trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || "#$%&*+/=@^_~-".contains(c)));
    (!v.is_empty()).then_some((v, false))
}

/// A bare value that needs no word before it: letters, then a digit or a sign.
fn strong_bare(v: &str) -> bool {
    v.bytes().find(|b| !b.is_ascii_alphabetic()).is_some_and(|b| b.is_ascii_digit() || b"#$%&*+@^_~".contains(&b))
}

/// The check of a match: its value is a password ([`password_value`]), quoted or bare,
/// and its word is not the name of a rule in a mark (`[REDACTED:cli-password]`).
pub(super) fn check(caps: &Caps<'_>, s: &str) -> bool {
    let quoted = caps.name("s5").is_none() && caps.name("s6").is_none();
    let code = caps.name("word").is_some_and(|(at, word)| {
        !word_starts(caps.before(at))
            || in_code(caps.from(at + word.len()).trim_start_matches(|c: char| c.is_ascii_alphabetic()))
    });
    !code && password_value(s, quoted)
}

/// Whether what follows a word for *password* (past the rest of its letters) makes it a
/// name in code: `passwordField.style…`, `password_hash`, `password(…)`, `password[0]`.
fn in_code(after: &str) -> bool {
    after.starts_with(['.', '_', '(', '[']) || after.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether a word for *password* that comes after `before` starts a word of the text: not
/// inside a name (`${DB_PASSWORD}`, `passwd_file`) or a mark's rule (`[REDACTED:cli-password]`).
/// (`ароль` is found inside its word by design: its first letter may be a capital.)
fn word_starts(before: &str) -> bool {
    let line = before.rfind('\n').map_or(before, |nl| &before[nl + 1..]);
    !in_mark(line) && !line.bytes().next_back().is_some_and(|b| b.is_ascii_alphanumeric() || b"_$-./".contains(&b))
}

/// Whether a text that ends with `before` is inside a mark there.
fn in_mark(before: &str) -> bool {
    before.rfind(MARK_PREFIX).is_some_and(|at| !before[at..].contains(']'))
}

/// Whether `v`, the value told after a word for *password*, is a password.
pub(super) fn password_value(v: &str, quoted: bool) -> bool {
    let v = v.trim();
    let chars = v.chars().count();
    if chars < if quoted { 3 } else { 6 } || chars > 64 {
        return false;
    }
    if placeholder(v) || placeholder_word(v) || reference(v, quoted) || type_word(v) || v.starts_with('$') {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("www.") || looks_like_email(&lower) || file_name(&lower) {
        return false;
    }
    if quoted {
        // A quoted value is what was typed, unless it is prose (`"reset password"`).
        return !(v.contains(' ') && v.bytes().all(|b| b.is_ascii_lowercase() || b == b' ') && v.len() > 24);
    }
    if !v.is_ascii() || v.trim_end_matches('=').contains('=') {
        // Another script, or `name=value`: an assignment, which the rules for names read.
        return false;
    }
    let has = |f: fn(&u8) -> bool| v.as_bytes().iter().any(f);
    let letters = has(u8::is_ascii_alphabetic);
    let digits = has(u8::is_ascii_digit);
    let signs = v.bytes().any(|b| b.is_ascii_punctuation() && !matches!(b, b'-' | b'.'));
    if !(letters && (digits || signs)) {
        // `required`, `stored-in-vault`, `12345678`: a word, or digits alone.
        return false;
    }
    !technical(v, &lower)
}

/// Whether `lower` names something technical rather than being a password: an algorithm
/// (`sha-256`, `argon2id`, `aes-256-gcm`), a size (`12-characters`, `2048-bit`), a version
/// (`v1.2.3`), an identifier (`db_password2`), a hashed form (`sha256-hashed`).
fn technical(v: &str, lower: &str) -> bool {
    const STEMS: &[&str] = &[
        "sha",
        "md",
        "aes",
        "rsa",
        "des",
        "utf",
        "base",
        "ipv",
        "http",
        "oauth",
        "argon",
        "argonid",
        "argoni",
        "pbkdf",
        "bcrypt",
        "scrypt",
        "blake",
        "crc",
        "hmac",
        "hmacsha",
        "shahmac",
        "ecdsa",
        "ed",
        "tls",
        "ssl",
        "x",
        "v",
        "mfa",
        "fa",
        "totp",
        "hotp",
        "s",
        "ec",
        "k",
        "utfmb",
        "latin",
        "win",
        "aesgcm",
        "aescbc",
        "gcm",
        "cbc",
        "rsaoaep",
        "pkcs",
        "pbkdfsha",
        "pbkdfhmacsha",
        "mdcrypt",
        "nist",
        "p",
        "secp",
        "secpk",
        "curve",
        "ripemd",
        "keccak",
        "ntlm",
        "ntlmv",
        "kerberos",
        "krb",
        "sasl",
        "scram",
        "scramsha",
        "digestmd",
        "cram",
        "crammd",
    ];
    let letters: String = lower.chars().filter(char::is_ascii_alphabetic).collect();
    if STEMS.contains(&letters.as_str()) {
        return true;
    }
    const UNITS: &[&str] = &[
        "bit",
        "bits",
        "byte",
        "bytes",
        "char",
        "chars",
        "character",
        "characters",
        "digit",
        "digits",
        "letters",
        "symbols",
        "long",
        "min",
        "max",
        "days",
        "hours",
    ];
    let parts: Vec<&str> = lower.split(['-', '_', '.', '/', '+']).filter(|p| !p.is_empty()).collect();
    if lower.starts_with(|c: char| c.is_ascii_digit()) && parts.last().is_some_and(|p| UNITS.contains(p)) {
        return true;
    }
    let version = lower.trim_start_matches('v');
    if version.contains('.') && version.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return true;
    }
    // Words joined by `-` or `_` (`sha256-hashed`, `db_password2`, `stored-in-vault-01`): a
    // part that is a longer lowercase word ending like a verb or an adjective, or parts
    // that are all words and numbers in snake or kebab case.
    let wordish = |p: &&str| p.len() >= 4 && p.bytes().all(|b| b.is_ascii_lowercase());
    let verbish =
        |p: &&str| wordish(p) && ["ed", "ing", "able", "ible", "ized", "ised", "tion"].iter().any(|s| p.ends_with(s));
    if parts.len() >= 2 && parts.iter().any(verbish) {
        return true;
    }
    // Written in snake case with no capital (`db_password2`); `Roma_2023x` is a password.
    let identifier = v.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    identifier && v.contains('_') && parts.iter().any(wordish)
}

fn looks_like_email(lower: &str) -> bool {
    lower.split_once('@').is_some_and(|(user, host)| {
        !user.is_empty()
            && host.contains('.')
            && host.rsplit('.').next().is_some_and(|tld| tld.len() >= 2 && tld.bytes().all(|b| b.is_ascii_lowercase()))
    })
}

fn file_name(lower: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "yaml",
        "yml",
        "json",
        "env",
        "txt",
        "conf",
        "cfg",
        "ini",
        "toml",
        "md",
        "pem",
        "key",
        "kdbx",
        "gpg",
        "asc",
        "sh",
        "py",
        "rs",
        "js",
        "ts",
        "go",
        "xml",
        "properties",
        "csv",
        "log",
    ];
    lower.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && EXTENSIONS.contains(&ext)
            && stem.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./".contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::super::redact;

    #[track_caller]
    fn redacts(text: &str, secret: &str) {
        let out = redact(text).text;
        assert!(!out.contains(secret), "{secret:?} left in {out:?}");
        assert!(out.contains("[REDACTED:password-in-prose]") || out.contains("[REDACTED:"), "{out:?}");
    }

    #[track_caller]
    fn keeps(text: &str) {
        assert_eq!(redact(text).text, text);
    }

    #[test]
    fn passwords_told_in_a_sentence_are_redacted_in_many_languages() {
        for (text, secret) in [
            ("The password for the staging database is Xk29dLq0Pz, rotate it Friday.", "Xk29dLq0Pz"),
            ("ssh in as deploy; the password is hunter2.", "hunter2"),
            ("Das Passwort für den Server lautet Sommer2024!", "Sommer2024"),
            ("Le mot de passe de la base est « Tr0ub4dor&3 ».", "Tr0ub4dor&3"),
            ("La contraseña del wifi es CasaAzul#77", "CasaAzul#77"),
            ("A senha do banco é Br4sil@2024", "Br4sil@2024"),
            ("La password dell'admin è Roma_2023x", "Roma_2023x"),
            ("Het wachtwoord is Tulp3nVeld!9", "Tulp3nVeld!9"),
            ("本番DBのパスワードは「Sakura2024」です", "Sakura2024"),
            ("管理员密码是 Admin#8832，请勿外传", "Admin#8832"),
            ("서버 비밀번호는 Seoul2024!! 입니다", "Seoul2024"),
            ("Пароль от базы данных — Moskva_1985", "Moskva_1985"),
            ("Hasło do serwera to Krakow#2020", "Krakow#2020"),
            ("CREATE USER app WITH PASSWORD 'n0t-s0-s3cret';", "n0t-s0-s3cret"),
            ("password Xk29dLq0Pz", "Xk29dLq0Pz"),
        ] {
            redacts(text, secret);
        }
    }

    #[test]
    fn sentences_that_only_mention_a_password_are_left_alone() {
        for text in [
            "The password is required and must be at least 12 characters long.",
            "The password is hashed with argon2id before it is stored.",
            "The password is sha256-hashed on the client.",
            "Passwords are stored in Vault; see docs/secrets.md.",
            "The password is 12-characters minimum.",
            "Reset the password: run `tmws auth reset` and follow the prompts.",
            "Das Passwort ist mindestens zwölf Zeichen lang.",
            "Le mot de passe est stocké dans le coffre.",
            "La contraseña es obligatoria.",
            "パスワードは8文字以上にしてください。",
            "密码是必填项。",
            "비밀번호는 필수입니다.",
            "Пароль — обязательное поле.",
            "The password is $DB_PASSWORD, read from the environment.",
            "The default password is 'changeme'; change it on first login.",
            "password policy: SHA-256 with salt",
            "The password is AES-256 encrypted at rest.",
            "the password is in config.yaml",
            "Password reset emails go to ops@example.com.",
        ] {
            keeps(text);
        }
    }
}
