/*
 * The 25-state HiRace FSM transition table (seed 002), generated from
 * analyzer/fsm25-transitions.csv into fsm25_table.c by gen_fsm25_table.py.
 * State numbers follow the CSV's order of first appearance: INIT is 0 (so a
 * zeroed shadow word is INIT) and RACE is 24.
 */
#ifndef WARPRACE_FSM25_TABLE_H
#define WARPRACE_FSM25_TABLE_H

#include <stdint.h>

#define WR_FSM25_STATES 25
#define WR_FSM25_INIT 0
#define WR_FSM25_RACE 24

enum { WR_FSM_ACC_R = 0, WR_FSM_ACC_W = 1, WR_FSM_ACC_BA = 2, WR_FSM_ACC_GA = 3 };
enum { WR_FSM_SYNC_U = 0, WR_FSM_SYNC_W = 1, WR_FSM_SYNC_B = 2 };
enum { WR_FSM_REL_S = 0, WR_FSM_REL_W = 1, WR_FSM_REL_B = 2, WR_FSM_REL_G = 3 };

extern const char *const wr_fsm25_state_names[WR_FSM25_STATES];
/* [state][access][sync][relation] -> next state */
extern const uint8_t wr_fsm25_next[WR_FSM25_STATES][4][3][4];

#endif
