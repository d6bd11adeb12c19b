"""Elixir chunks by definition, on real source with the real tree-sitter grammar."""

from __future__ import annotations

from test_chunking import by_symbol, chunks

CART = r'''defmodule Shop.Cart do
  @moduledoc """
  A shopping cart.

  ## Examples

      iex> Shop.Cart.new()
  """

  alias Shop.Item

  defstruct items: [], total: 0

  @typedoc "A cart."
  @type t :: %__MODULE__{items: [Item.t()], total: non_neg_integer()}

  @doc """
  Adds an item.
  """
  @spec add(t, Item.t()) :: t
  def add(%__MODULE__{} = cart, item) do
    %{cart | items: [item | cart.items], total: cart.total + item.price}
  end

  @doc false
  def count(%__MODULE__{items: []}), do: 0
  def count(%__MODULE__{items: items}), do: length(items)

  # Sums the prices.
  defp sum([]), do: 0
  defp sum([item | rest]), do: item.price + sum(rest)

  defmacro is_empty(cart) do
    quote do: unquote(cart).items == []
  end

  defmodule Line do
    @moduledoc false
    defstruct [:item, :quantity]

    def subtotal(%Line{item: item, quantity: q}), do: item.price * q
  end
end

defprotocol Shop.Priced do
  @doc "The price in cents."
  def price(value)
end

defimpl Shop.Priced, for: Shop.Cart do
  def price(cart), do: cart.total
end
'''


def rows(source: str, max_tokens: int) -> list[tuple[str, str | None, int, int]]:
    found = chunks(source, "elixir", max_tokens)
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in found]


def test_a_small_module_is_one_chunk() -> None:
    assert rows(CART, 1000) == [
        ("module", "Shop.Cart", 1, 43),
        ("interface", "Shop.Priced", 45, 48),
        ("impl", "Shop.Priced.Shop.Cart", 50, 52),
    ]


def test_a_large_module_splits_into_its_header_and_definitions() -> None:
    assert rows(CART, 256) == [
        ("module", "Shop.Cart", 1, 15),  # @moduledoc, alias, defstruct and @type
        ("function", "Shop.Cart.add", 17, 23),
        ("function", "Shop.Cart.count", 25, 27),  # both clauses, under their @doc false
        ("function", "Shop.Cart.sum", 29, 31),  # the comment above, both clauses
        ("macro", "Shop.Cart.is_empty", 33, 35),
        ("module", "Shop.Cart.Line", 37, 43),  # the outer `end` joins the last piece
        ("interface", "Shop.Priced", 45, 48),
        ("impl", "Shop.Priced.Shop.Cart", 50, 52),
    ]
    found = chunks(CART, "elixir", 256)
    assert by_symbol(found, "Shop.Cart")[0].text.startswith("defmodule Shop.Cart do\n  @moduledoc")
    add = by_symbol(found, "Shop.Cart.add")[0]
    assert add.text.startswith('  @doc """\n  Adds an item.\n  """\n  @spec add(t, Item.t())')
    assert add.signature == "def add(%__MODULE__{} = cart, item)"
    assert by_symbol(found, "Shop.Cart.count")[0].signature == "def count(%__MODULE__{items: []})"
    assert by_symbol(found, "Shop.Cart.is_empty")[0].signature == "defmacro is_empty(cart)"
    assert by_symbol(found, "Shop.Cart")[0].signature == "defmodule Shop.Cart"
    assert by_symbol(found, "Shop.Priced.Shop.Cart")[0].signature == (
        "defimpl Shop.Priced, for: Shop.Cart"
    )


def test_nested_modules_qualify_their_members_when_split() -> None:
    found = rows(CART, 24)
    assert {symbol for _, symbol, _, _ in found} == {
        "Shop.Cart", "Shop.Cart.add", "Shop.Cart.count", "Shop.Cart.sum", "Shop.Cart.is_empty",
        "Shop.Cart.Line", "Shop.Cart.Line.subtotal", "Shop.Priced", "Shop.Priced.price",
        "Shop.Priced.Shop.Cart", "Shop.Priced.Shop.Cart.price",
    }  # fmt: skip
    assert {kind for kind, _, _, _ in found} == {"module", "function", "macro", "interface", "impl"}


def test_no_chunk_is_a_lone_attribute() -> None:
    for budget in (48, 64, 96, 128, 256):
        for chunk in chunks(CART, "elixir", budget):
            lines = [line.strip() for line in chunk.text.splitlines() if line.strip()]
            assert not lines[-1].startswith(("@doc", "@spec", "@impl", "#")), chunk


BEHAVIOUR = r'''defmodule Shop.Store do
  @moduledoc "Where carts are kept."

  @doc """
  Loads the cart of `id`.
  """
  @callback load(id :: term) :: {:ok, Shop.Cart.t()} | :error

  @doc "Saves a cart."
  @callback save(Shop.Cart.t()) :: :ok

  @doc """
  Starts the store under a supervisor.

  The options are passed on to the adapter.
  """
  @spec start_link(keyword) :: GenServer.on_start()
  def start_link(opts \\ []) do
    name = Keyword.get(opts, :name, __MODULE__)
    adapter = Keyword.fetch!(opts, :adapter)
    state = %{adapter: adapter, carts: %{}, saved: 0, loaded: 0, errors: 0}
    GenServer.start_link(__MODULE__, state, name: name)
  end

  @impl true
  def handle_call({:load, id}, _from, state) do
    {:reply, Map.fetch(state.carts, id), %{state | loaded: state.loaded + 1}}
  end

  @impl true
  def handle_call({:save, cart}, _from, state) do
    {:reply, :ok, put_in(state.carts[cart.id], cart)}
  end

  defguard is_cart(value) when is_map(value) and is_map_key(value, :items)
  defdelegate new(), to: Shop.Cart
end
'''


def test_callbacks_guards_delegates_and_clauses_with_their_attributes() -> None:
    assert rows(BEHAVIOUR, 200) == [
        ("module", "Shop.Store", 1, 2),
        ("function", "Shop.Store.load", 4, 7),
        ("function", "Shop.Store.save", 9, 10),
        ("function", "Shop.Store.start_link", 12, 23),
        ("function", "Shop.Store.handle_call", 25, 33),  # two clauses, each with its @impl
        ("macro", "Shop.Store.is_cart", 35, 35),
        ("function", "Shop.Store.new", 36, 37),
    ]


def test_a_long_definition_keeps_its_doc_with_its_head() -> None:
    found = chunks(BEHAVIOUR, "elixir", 64)
    parts = by_symbol(found, "Shop.Store.start_link")
    assert len(parts) >= 2
    assert parts[0].text.startswith('  @doc """\n  Starts the store')
    assert "\n  def start_link(opts \\\\ []) do" in parts[0].text  # not the doc alone
    assert all(p.signature == "def start_link(opts \\\\ [])" for p in parts)
    clauses = by_symbol(found, "Shop.Store.handle_call")
    assert [(c.start_line, c.end_line) for c in clauses] == [(25, 28), (30, 33)]


def test_scripts_without_a_module() -> None:
    source = 'Mix.install([:jason])\n\n# Greets.\ndef greet(name), do: "hi #{name}"\n'
    assert rows(source, 256) == [("block", None, 1, 1), ("function", "greet", 3, 4)]


def test_the_module_head_opens_its_long_moduledoc() -> None:
    paragraphs = "\n\n".join(
        f"  Paragraph {i} tells how the endpoint serves requests." for i in range(30)
    )
    source = (
        f'defmodule Shop.Endpoint do\n  @moduledoc """\n{paragraphs}\n  """\n\n'
        "  def call(conn, _opts), do: conn\nend\n"
    )
    found = chunks(source, "elixir", 64)
    assert found[0].text.startswith('defmodule Shop.Endpoint do\n  @moduledoc """\n  Paragraph 0')
    assert all(c.end_line > c.start_line for c in found if c.kind == "module")
    assert {(c.kind, c.symbol) for c in found} == {
        ("module", "Shop.Endpoint"),
        ("function", "Shop.Endpoint.call"),
    }
