/* main.c -- the pgcc command.  Everything else is in the library (driver.c). */
#include "pgcc.h"

int main(int argc, char **argv) { return pgcc_main(argc, argv, stdout, stderr); }
