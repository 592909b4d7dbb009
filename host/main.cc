#include "cli.h"

int main(int argc, char** argv) { return kplab::host::Main(argc, argv); }
