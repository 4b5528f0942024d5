#pragma once
// The interactive mode's line editor: GNU readline (emacs keys, Ctrl+R search, history kept
// in a file across sessions), driven through its callback interface so that Ctrl+C clears
// the line instead of ending the process (see interrupt.h).
#include <filesystem>
#include <string>

namespace specd::cli {

class LineReader {
  public:
    enum class Status { line, interrupted, eof };

    // history_file empty: history for this session only.
    explicit LineReader(std::filesystem::path history_file);
    ~LineReader(); // saves the history
    LineReader(const LineReader &)             = delete;
    LineReader & operator=(const LineReader &) = delete;

    // Reads one line after `prompt`; `line` is what was typed (for interrupted: what was
    // on the line when Ctrl+C came).
    Status read(const std::string & prompt, std::string & line);

    // `/set history` and `/set nohistory`: whether lines read from now on are remembered.
    void set_history(bool on) { history_ = on; }

  private:
    std::filesystem::path history_file_;
    bool                  history_ = true;
};

} // namespace specd::cli
