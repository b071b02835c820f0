"""How an ``RGA`` keeps its items: a sequence of runs in blocks, found by visible position or by id.

Items live in a list of blocks of at most ``rga._BLOCK_MAX`` items, each block with its visible length, and blocks in
groups of 16 with theirs, so a position is found by skipping groups, blocks, then items, each from the nearer end.
A cursor remembers the last edit, and since edits cluster, most lookups walk an item or two from it. Ids are found
through a per-replica index of item starts (bisect), which merges and ``write_text`` need but local typing does
not: local edits drop it and the next id lookup rebuilds it. The CRDT's rules (which element goes where, what a
merge keeps) are ``rga.RGA``'s; this is its storage, written flat for speed like the rest.
"""

from __future__ import annotations

from bisect import bisect_right

from omxfs.crdt.rga_state import Run

GROUP_BITS = 4  # blocks come in groups of 16 with their visible length, so a far jump skips groups first


class RunBlocks:
    """The items of one RGA in blocks, with the cursor and the id index (see the module docstring)."""

    def __init__(self) -> None:
        self._blocks: list[list[Run]] = [[]]
        self._bvis: list[int] = [0]  # visible characters per block
        self._gvis: list[int] = [0]  # visible characters per group of blocks
        self._len = 0
        # the cursor: block, item in it, visible position of that item, visible position of that block
        self._cb = self._ci = self._cp = self._cbp = 0
        self._index: dict[str, tuple[list[int], list[Run]]] | None = None  # replica → item starts, items
        self._bpos: dict[int, int] | None = None  # id(block) → its index, while the id index exists

    def _locate(self, p: int) -> tuple[int, int, int]:
        """Block, item index and visible start of the item holding visible character ``p`` (0 <= p < len).

        Starts from the cursor and leaves it on the result: edits cluster, so this is usually a step or two.
        Otherwise it finds the block through the groups and scans it from its nearer end.
        """
        cb, cbp, bvis = self._cb, self._cbp, self._bvis
        if cbp <= p < cbp + bvis[cb]:
            ci, cp = self._ci, self._cp
            if p < cp and p - cbp < cp - p:
                ci, cp = 0, cbp
        else:
            cb, cbp = self._find_block(p)
            end = cbp + bvis[cb]
            ci, cp = (len(self._blocks[cb]), end) if end - p < p - cbp else (0, cbp)
        blk = self._blocks[cb]
        if p < cp:
            while p < cp:
                ci -= 1
                cp -= len(blk[ci].text)
        else:
            while True:
                it = blk[ci]
                if it.text:
                    e = cp + it.n
                    if p < e:
                        break
                    cp = e
                ci += 1
        self._cb, self._ci, self._cp, self._cbp = cb, ci, cp, cbp
        return cb, ci, cp

    def _find_block(self, p: int) -> tuple[int, int]:
        """The block holding visible character ``p``, and its visible start: groups first, from the nearer end."""
        gvis, bvis = self._gvis, self._bvis
        if p < self._len >> 1:
            g = gp = 0
            while p >= gp + gvis[g]:
                gp += gvis[g]
                g += 1
        else:
            g = len(gvis) - 1
            gp = self._len - gvis[g]
            while p < gp:
                g -= 1
                gp -= gvis[g]
        if p - gp < gvis[g] >> 1:
            cb, cbp = g << GROUP_BITS, gp
            while p >= cbp + bvis[cb]:
                cbp += bvis[cb]
                cb += 1
        else:
            cb = min((g + 1) << GROUP_BITS, len(bvis)) - 1
            cbp = gp + gvis[g] - bvis[cb]
            while p < cbp:
                cb -= 1
                cbp -= bvis[cb]
        return cb, cbp

    def _split(self, it: Run, k: int) -> Run:
        """Cut ``it`` after its ``k``-th element; returns the tail, which the caller puts right after it."""
        tail = Run(it.rep, it.ctr + k, it.n - k, it.rep, it.ctr + k - 1, it.text[k:])
        it.n = k
        it.text = it.text[:k]
        if self._index is not None:
            self._ix_add(tail, it.blk)
        return tail

    def _kill(self, blk: list[Run], ci: int, k: int, d: int) -> int:
        """Delete elements ``k … k+d-1`` of the visible item ``blk[ci]``; returns where the last one now is.

        Deleted pieces join a neighbouring tombstone of the same run when there is one, so that backspacing
        through a run leaves one tombstone, not one per keystroke.
        """
        it = blk[ci]
        n = it.n
        if k:
            if k + d < n:  # a hole in the middle
                tail = self._split(it, k + d)
                blk.insert(ci + 1, tail)
            nxt = blk[ci + 1] if ci + 1 < len(blk) else None
            if nxt is not None and not nxt.text and nxt.continues(it) and k + d == n:
                old = nxt.ctr
                nxt.ctr, nxt.n, nxt.octr = old - d, nxt.n + d, nxt.octr - d
                it.text, it.n = it.text[:k], k
                if self._index is not None:
                    self._ix_rekey(nxt, old)
            else:
                dead = self._split(it, k)
                dead.text = ""
                blk.insert(ci + 1, dead)
            return ci + 1
        prev = blk[ci - 1] if ci else None
        if prev is not None and not prev.text and it.continues(prev):
            if d < n:  # the dead head joins the tombstone before it
                old = it.ctr
                prev.n += d
                it.ctr, it.n, it.octr, it.text = old + d, n - d, it.octr + d, it.text[d:]
                if self._index is not None:
                    self._ix_rekey(it, old)
                return ci - 1
            prev.n += n
            self._drop(blk, ci)
            ci -= 1
        elif d < n:
            tail = self._split(it, d)
            blk.insert(ci + 1, tail)
            it.text = ""
        else:
            it.text = ""
        it = blk[ci]
        nxt = blk[ci + 1] if ci + 1 < len(blk) else None
        if nxt is not None and not nxt.text and nxt.continues(it):
            it.n += nxt.n
            self._drop(blk, ci + 1)
        return ci

    def _drop(self, blk: list[Run], ci: int) -> None:
        """Remove an item whose elements a neighbour has just absorbed."""
        it = blk.pop(ci)
        if self._index is not None:
            starts, items = self._index[it.rep]
            j = bisect_right(starts, it.ctr) - 1
            del starts[j], items[j]

    def _cloned_blocks(self) -> list[list[Run]]:
        return [[Run(it.rep, it.ctr, it.n, it.orep, it.octr, it.text) for it in blk] for blk in self._blocks]

    def _regroup(self) -> None:
        size = 1 << GROUP_BITS
        self._gvis = [sum(self._bvis[i : i + size]) for i in range(0, len(self._bvis), size)]

    def _split_block(self, cb: int) -> None:
        blk = self._blocks[cb]
        half = len(blk) // 2
        right = blk[half:]
        del blk[half:]
        vis = sum(len(it.text) for it in right)
        self._blocks.insert(cb + 1, right)
        self._bvis.insert(cb + 1, vis)
        self._bvis[cb] -= vis
        self._regroup()
        if self._cb > cb:
            self._cb += 1
        elif self._cb == cb and self._ci >= half:
            self._cb, self._ci, self._cbp = cb + 1, self._ci - half, self._cbp + self._bvis[cb]
        if self._index is not None:
            for it in right:
                it.blk = right
            self._bpos = None

    # -- ids --------------------------------------------------------------------------------------------

    def _ensure_index(self) -> None:
        if self._index is not None:
            return
        by_rep: dict[str, list[Run]] = {}
        for blk in self._blocks:
            for it in blk:
                it.blk = blk
                by_rep.setdefault(it.rep, []).append(it)
        index: dict[str, tuple[list[int], list[Run]]] = {}
        for rep, items in by_rep.items():
            items.sort(key=lambda it: it.ctr)
            index[rep] = ([it.ctr for it in items], items)
        self._index = index

    def _ix_add(self, it: Run, blk: list[Run]) -> None:
        assert self._index is not None
        it.blk = blk
        starts, items = self._index.setdefault(it.rep, ([], []))
        j = bisect_right(starts, it.ctr)
        starts.insert(j, it.ctr)
        items.insert(j, it)

    def _ix_rekey(self, it: Run, old: int) -> None:
        """``it`` now starts at another counter; no other run of its replica lies in between."""
        assert self._index is not None
        starts, _ = self._index[it.rep]
        starts[bisect_right(starts, old) - 1] = it.ctr

    def _find(self, rep: str, c: int) -> Run | None:
        assert self._index is not None
        entry = self._index.get(rep)
        if entry is None:
            return None
        starts, items = entry
        j = bisect_right(starts, c) - 1
        if j < 0:
            return None
        it = items[j]
        return it if c < it.ctr + it.n else None

    def _held(self, rep: str, c: int, n: int) -> int:
        """How many of the elements ``(rep, c) … (rep, c + n - 1)`` this state holds, from the first on."""
        have = 0
        while have < n:
            it = self._find(rep, c + have)
            if it is None:
                break
            have = it.ctr + it.n - c
        return min(have, n)

    def _holds_any(self, rep: str, lo: int, hi: int) -> bool:
        """Whether any element ``(rep, lo) … (rep, hi - 1)`` is here."""
        assert self._index is not None
        entry = self._index.get(rep)
        if entry is None:
            return False
        starts, items = entry
        j = bisect_right(starts, hi - 1) - 1
        return j >= 0 and items[j].ctr + items[j].n > lo

    def _where(self, it: Run) -> tuple[int, int]:
        if self._bpos is None:
            self._bpos = {id(blk): i for i, blk in enumerate(self._blocks)}
        return self._bpos[id(it.blk)], it.blk.index(it)

    def _maximal_runs(self) -> list[Run]:
        """The items in order with every run that continues the one before (same deleted flag) joined."""
        runs: list[Run] = []
        prev: Run | None = None
        for blk in self._blocks:
            for it in blk:
                if prev is not None and bool(it.text) == bool(prev.text) and it.continues(prev):
                    prev = Run(prev.rep, prev.ctr, prev.n + it.n, prev.orep, prev.octr, prev.text + it.text)
                    runs[-1] = prev
                else:
                    prev = it
                    runs.append(it)
        return runs
