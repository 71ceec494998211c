//! Files an operator names on the command line (`--tools`, `--script`, `--provider-catalog`, a
//! program file), read through the one checked path (docs/threat-model.md, "Files an operator names").

/// Reads a file an operator named (`--tools`, `--script`, `--provider-catalog`, a program file)
/// through the checked path for operator files: not a symbolic link, a regular file (a FIFO is
/// refused at once), this user's or root's, not writable by others, at most 64 MiB
/// (docs/threat-model.md, "Files an operator names"). Callers prefix the option and the path.
pub(crate) fn read_operator_file(
    path: &std::path::Path,
) -> Result<String, codemode_files::FileError> {
    codemode_files::read_to_string(
        path,
        &codemode_files::Rules::READ,
        codemode_files::MAX_FILE_BYTES,
    )
}
