/* stan_fix — see stan_fix.h. */
#include "stan_fix.h"

#include <string.h>
#include <time.h>

void seen_init(seen *s, bool ack) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->ack = ack;
}

void on_msg(stanConnection *sc, stanSubscription *sub, const char *channel,
            stanMsg *msg, void *closure) {
    (void)sc;
    (void)channel;
    seen *s = closure;
    pthread_mutex_lock(&s->mu);
    /* Ack before the count is seen: a test that closes or unsubscribes as
     * soon as it has its messages must not race the ack it is owed (an ack
     * that reaches the server after the close is rightly not applied, and
     * the message is redelivered to the durable later). */
    if (s->ack) {
        stanSubscription_AckMsg(sub, msg);
    }
    if (s->n < 256) {
        s->seqs[s->n] = stanMsg_GetSequence(msg);
        s->redelivered[s->n] = stanMsg_IsRedelivered(msg);
        s->n++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    stanMsg_Destroy(msg);
}

void on_complete(void *closure) {
    seen *s = closure;
    pthread_mutex_lock(&s->mu);
    s->done = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void unsubscribe_wait(stanSubscription *sub, seen *s) {
    stanSubscription_Unsubscribe(sub);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    while (!s->done && rc == 0) {
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &dl);
    }
    pthread_mutex_unlock(&s->mu);
    stanSubscription_Destroy(sub);
}

bool wait_n(seen *s, size_t n) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += STAN_FIX_WAIT_MS / 1000;
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    while (s->n < n && rc == 0) {
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &dl);
    }
    bool ok = s->n >= n;
    pthread_mutex_unlock(&s->mu);
    return ok;
}
