// `flint tokenize -m MODEL -p TEXT` — the ids and pieces a model's tokenizer makes of a text (debugging).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace flint::cli {
namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt;
    std::string file;
    bool special = false;
    bool no_bos = false;
    bool ids_only = false;
};

// Printable form of a piece: control bytes and quotes escaped, and every non-ASCII byte when the piece
// is not valid UTF-8 on its own (part of a character split across tokens).
std::string escape(std::string_view s) {
    const bool valid = utf8::is_valid(s);
    std::string out;
    for (unsigned char c : s) {
        switch (c) {
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            case '\\': out += "\\\\"; break;
            case '\'': out += "\\'"; break;
            default:
                if (c < 0x20 || c == 0x7F || (c >= 0x80 && !valid)) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02X", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out;
}

void tokenize(const TokenizeOptions& o) {
    std::string text = o.prompt;
    if (!o.file.empty()) {
        std::ifstream in(o.file, std::ios::binary);
        if (!in) fail(o.file, ": cannot read");
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    auto f = gguf::File::open(o.model);
    auto tok = Tokenizer::from_gguf(*f);
    const auto ids = tok->encode(text, tok->add_bos() && !o.no_bos, o.special);
    if (o.ids_only) {
        for (size_t k = 0; k < ids.size(); ++k) std::printf("%s%d", k ? " " : "", ids[k]);
        std::printf("\n");
        return;
    }
    for (TokenId id : ids) {
        std::printf("%6d -> '%s'%s\n", id, escape(tok->token_to_piece(id)).c_str(), tok->is_special(id) ? "  (special)" : "");
    }
    std::printf("%zu tokens (%s, pre \"%s\", %d in vocabulary)\n", ids.size(), std::string(tok->model_kind()).c_str(),
                std::string(tok->pre()).c_str(), tok->n_vocab());
}

}  // namespace

void register_tokenize(CLI::App& app) {
    auto o = std::make_shared<TokenizeOptions>();
    o->model = default_model_path();
    CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids and pieces a model's tokenizer makes of a text");
    cmd->add_option("-m,--model", o->model, "GGUF model (its tokenizer metadata is used)")->capture_default_str();
    auto* p = cmd->add_option("-p,--prompt", o->prompt, "Text to tokenize");
    cmd->add_option("-f,--file", o->file, "Read the text from a file (exact bytes)")->excludes(p);
    cmd->add_flag("--special", o->special, "Recognise special tokens written in the text (e.g. <|im_start|>)");
    cmd->add_flag("--no-bos", o->no_bos, "Do not prepend BOS even if the model adds one");
    cmd->add_flag("--ids-only", o->ids_only, "Print only the ids, space-separated, on one line");
    cmd->callback([o] { tokenize(*o); });
}

}  // namespace flint::cli
