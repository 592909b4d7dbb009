// Datasets and predictions built from records held in memory (the Python module, library users)
// instead of read from files. The result is the same RawDataset / RawPredictions the file importers
// produce, so every profile's conventions apply unchanged. Records are named in messages as
// "<what>[i]" (0-based, as the caller's list index), e.g. "documents[3]: second document with id
// \"d7\" (expected unique document ids)"; nothing is returned when any record is wrong.
//
// Threads: no shared state: pure functions, safe from several threads at once.
#pragma once

#include <string>
#include <vector>

#include "kplab/io.h"
#include "kplab/result.h"

namespace kplab {

// Checks and completes in-memory documents: every string must be UTF-8, every reference a non-empty
// list of alternatives; an empty id becomes "1", "2", ... (list order) and ids must be unique. Each
// record whose loc.file is empty gets {"<what>[i]", 0} (messages name it so). The content hash is the SHA-256 of a canonical serialization
// of every field, so the same records give the same hash in every process (the run store identifies
// datasets by it). name is stored as the dataset's name and path.
Result<RawDataset> DatasetFromRecords(const std::string& name, std::vector<RawDoc> docs,
                                      const std::string& what = "documents");

// Predictions for dataset, in rank order per document. by_id: every record's doc_id names a document
// (each exactly once) and the result is put in dataset order; otherwise the records are in dataset
// order and their number must equal the number of documents. scores, when not empty, has one finite
// value per phrase. Records are named as in DatasetFromRecords. The content hash is computed as for DatasetFromRecords.
Result<RawPredictions> PredictionsFromRecords(const RawDataset& dataset, const std::string& name,
                                              std::vector<RawPrediction> preds, bool by_id,
                                              const std::string& what = "predictions");

}  // namespace kplab
