select id as order_id, customer_id, cast(ordered_at as date) as ordered_on, status
from {{ source('shop', 'orders') }}
