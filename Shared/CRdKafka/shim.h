#ifndef PUSHLINE_CRDKAFKA_SHIM_H
#define PUSHLINE_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>
#endif
