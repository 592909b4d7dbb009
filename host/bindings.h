// Native kp modules. One binding file per core module (lua_text.cc, lua_corpus.cc, ...); each exposes an
// installer registered in AllModules(). A binding checks its arguments, calls core, pushes results.
#pragma once

#include <memory>
#include <vector>

#include "kplab/corpus.h"
#include "sandbox.h"

struct lua_State;

namespace kplab::host {

// Every installer, in registration order.
const std::vector<ModuleInstaller>& AllModules();

// Installers (one per binding file).
void InstallText(lua_State* L);    // lua_text.cc: kp.lower, kp.split, kp.stem, kp.word_tokenize
void InstallCorpus(lua_State* L);  // lua_corpus.cc: Document, KeyphraseList, Match; kp.ideal_dcg, ...

// Pushes a Document userdata for corpus->docs[index] (keeps corpus alive).
void PushDocument(lua_State* L, std::shared_ptr<const Corpus> corpus, std::size_t index);
// Pushes a Corpus userdata.
void PushCorpus(lua_State* L, std::shared_ptr<const Corpus> corpus);

}  // namespace kplab::host
