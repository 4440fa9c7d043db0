"""How much a view computes and sends: the bounds that keep any model's figures fast and legible.

Each is a number of positions, tokens or cells per side. Long contexts (32k to 128k positions)
never allocate a matrix over every position: a view computes at most :data:`MAX_POSITIONS` rows
(every k-th row of a wider range) and sends the browser at most :data:`MAX_CELLS` cells a side
(block means); the figure says which.
"""

#: Most positions a position-position matrix or a projection computes per side (a stride beyond).
MAX_POSITIONS = 2048
#: The same for per-head biases, which hold one matrix per head.
MAX_POSITIONS_BIAS = 512
#: Most cells per side a heatmap sends the browser (about its width in pixels): block means beyond.
MAX_CELLS = 512
#: The same for a heatmap in one of two columns (an attention head beside the mean of its layer):
#: its plot area is 338 pixels wide at 1024×768 and 460 at 1920×1080.
MAX_PAIR_CELLS = 256
#: Most cells per side of one tile of small multiples (a tile is about 230 pixels high).
MAX_TILE_CELLS = 96
#: Beyond this many tokens an axis shows indices, and hover the tokens.
MAX_LABELS = 128
#: The default row of "position q against all" (BERT's first position after its 128-token phase).
PROFILE_Q = 128
#: Most positions the table probes read: a longer context is probed on its first positions.
MAX_PROBED = 2048
#: Most word tokens of an identical-word input.
MAX_IDENTICAL_LENGTH = 512


def max_positions(encoding) -> int:
    """Most rows per side of ``encoding``'s position-position matrix: :data:`MAX_POSITIONS_BIAS`
    for a bias scheme, :data:`MAX_POSITIONS` otherwise."""
    return MAX_POSITIONS_BIAS if encoding.has_bias else MAX_POSITIONS
