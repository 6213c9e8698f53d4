/* The evolutionary search (tuner/search.c): being written. */
#ifndef TESSEL_TUNER_SEARCH_H
#define TESSEL_TUNER_SEARCH_H
#endif
