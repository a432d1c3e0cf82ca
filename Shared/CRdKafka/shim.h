#ifndef PUSHLINE_CRDKAFKA_SHIM_H
#define PUSHLINE_CRDKAFKA_SHIM_H
#include <librdkafka/rdkafka.h>

/*
 * Swift cannot call the variadic rd_kafka_producev, so this fixes the one
 * argument list Pushline uses: a partition (RD_KAFKA_PARTITION_UA lets the
 * partitioner choose by key), copied key and value, optional headers (ownership passes to librdkafka on success only)
 * and a per-message opaque that comes back in the delivery report.
 */
static inline rd_kafka_resp_err_t pushline_produce(rd_kafka_t *rk,
                                                   const char *topic,
                                                   int32_t partition,
                                                   const void *key,
                                                   size_t key_len,
                                                   const void *value,
                                                   size_t value_len,
                                                   rd_kafka_headers_t *headers,
                                                   void *opaque) {
    if (headers == NULL) {
        return rd_kafka_producev(rk,
                                 RD_KAFKA_V_TOPIC(topic),
                                 RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_KEY(key, key_len),
                                 RD_KAFKA_V_VALUE((void *)value, value_len),
                                 RD_KAFKA_V_OPAQUE(opaque),
                                 RD_KAFKA_V_END);
    }
    return rd_kafka_producev(rk,
                             RD_KAFKA_V_TOPIC(topic),
                             RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_KEY(key, key_len),
                             RD_KAFKA_V_VALUE((void *)value, value_len),
                             RD_KAFKA_V_HEADERS(headers),
                             RD_KAFKA_V_OPAQUE(opaque),
                             RD_KAFKA_V_END);
}

#endif
