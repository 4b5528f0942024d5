#pragma once
// The terminal the CLI writes to, and how it reports an error: one line on stderr,
// "Error: <message>", and exit code 1, as Ollama's CLI does.
#include <string>
#include <vector>

namespace specd::cli {

bool stdout_is_terminal();
bool stderr_is_terminal();
// Columns of the terminal on stdout; 0 when stdout is not a terminal.
int terminal_width();

// Rows as aligned columns (Ollama's tables: four spaces between columns).
std::string format_table(const std::vector<std::vector<std::string>> & rows);

// Prints "Error: <message>" (newlines in the message become spaces) and returns 1.
int fail(const std::string & message);

} // namespace specd::cli
