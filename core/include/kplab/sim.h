// Similarity matrices between two keyphrase lists (rows = the first list, e.g. predictions; columns =
// the second, e.g. references) and the reductions embedding-based metrics are built from: cosine
// similarities of phrase vectors, row/column maxima, row top-k, and the maximum-weight one-to-one
// assignment (scipy.optimize.linear_sum_assignment(M, maximize=True)).
// Threads: pure functions; safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kplab/result.h"

namespace kplab {

// A dense row-major matrix of doubles: entry (r, c) is v[r * cols + c].
struct Matrix {
  int rows = 0;
  int cols = 0;
  std::vector<double> v;

  Matrix() = default;
  Matrix(int rows, int cols, double fill = 0.0)
      : rows(rows), cols(cols), v(static_cast<std::size_t>(rows) * cols, fill) {}

  double at(int r, int c) const { return v[static_cast<std::size_t>(r) * cols + c]; }
  double& at(int r, int c) { return v[static_cast<std::size_t>(r) * cols + c]; }
  std::span<const double> row(int r) const {
    return {v.data() + static_cast<std::size_t>(r) * cols, static_cast<std::size_t>(cols)};
  }
};

// The transpose (rows and columns swapped).
Matrix Transposed(const Matrix& m);

// Cosine similarities of na float32 row vectors a (na x dims, row-major) against nb vectors b: entry
// (i, j) = a_i . b_j / (|a_i| |b_j|), computed in double and clamped to [-1, 1]. A row without a vector
// (has[i] == 0; a null has means every row has one) or with zero norm has cosine 0 with everything,
// itself included (docs/embeddings.md: "cosines involving a phrase without a vector are 0"). Rows need
// not be unit length. NaN/inf in a vector give NaN entries in its row/column.
Matrix CosineMatrix(const float* a, const std::uint8_t* a_has, int na, const float* b,
                    const std::uint8_t* b_has, int nb, int dims);
// The pieces of CosineMatrix, for callers that keep norms of a vector table: each row's Euclidean norm
// (0 for a row without a vector), and one cell (0 when a norm is 0, else the dot product over the
// norms' product clamped to [-1, 1]), bit for bit CosineMatrix's.
std::vector<double> RowNorms(const float* x, const std::uint8_t* has, int n, int dims);
double CosineOf(const float* a, double norm_a, const float* b, double norm_b, int dims);

// Maximum and first argmax of every row (size rows) / column (size cols). Ties go to the lowest index.
// An empty row (cols == 0) or column (rows == 0) gives NaN and -1. Like numpy, a NaN entry wins: the
// maximum is NaN and the argmax the first NaN.
std::vector<double> RowMax(const Matrix& m);
std::vector<int> RowArgmax(const Matrix& m);
std::vector<double> ColMax(const Matrix& m);
std::vector<int> ColArgmax(const Matrix& m);

// The columns of row r's k largest entries, largest first; equal values by lower column index first;
// NaN ranks above every number (so RowTopK(m, r, 1)[0] == RowArgmax(m)[r]). k is clipped to
// [0, cols].
std::vector<int> RowTopK(const Matrix& m, int r, int k);
// Mean of row r's min(k, cols) largest entries; NaN when that is no entry (k <= 0 or cols == 0).
double RowTopKMean(const Matrix& m, int r, int k);

// A one-to-one assignment of rows to columns: row_to_col[r] is row r's column or -1 (size rows);
// exactly min(rows, cols) rows are assigned. total is the sum of the assigned entries.
struct Assignment {
  std::vector<int> row_to_col;
  double total = 0;
};

// Maximum-weight assignment of min(rows, cols) pairs, the problem scipy's
// linear_sum_assignment(M, maximize=True) solves, with the same algorithm: shortest augmenting paths
// with dual variables (Jonker-Volgenant as described by Crouse 2016), O(min^2 * max) time. When
// several assignments are optimal, which one is returned follows scipy's tie rules but is not part of
// the contract; the total is. Entries must be finite: NaN or +-inf -> Error naming the entry. An empty
// matrix gives total 0 and no pairs.
Result<Assignment> MaxWeightAssignment(const Matrix& m);

}  // namespace kplab
